package node

import (
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/mail"
)

func TestHTTPConnCapDerived(t *testing.T) {
	tests := []struct {
		name                  string
		ircCap, httpCap, want int
	}{
		{"defaults", DefaultConfig().MaxConnsPerIP, 0, 64},
		{"a small IRC cap keeps 64", 10, 0, 64},
		{"a large IRC cap leaves room for its WebSockets", 100, 0, 132},
		{"unlimited IRC leaves HTTP unlimited", -1, 0, -1},
		{"explicit HTTP cap wins", -1, 8, 8},
		{"explicit unlimited", 20, -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			c.MaxConnsPerIP, c.MaxHTTPConnsPerIP = tt.ircCap, tt.httpCap
			if got := c.derived().MaxHTTPConnsPerIP; got != tt.want {
				t.Fatalf("MaxHTTPConnsPerIP = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestTrustedProxyValidation(t *testing.T) {
	for _, tt := range []struct {
		proxies []string
		ok      bool
	}{
		{nil, true},
		{[]string{"127.0.0.1", "10.0.0.0/8", "::1"}, true},
		{[]string{"proxy.example"}, false},
		{[]string{"10.0.0.0/40"}, false},
	} {
		c := DefaultConfig()
		c.TrustedProxies = tt.proxies
		if err := c.Validate(); (err == nil) != tt.ok {
			t.Errorf("TrustedProxies %v: Validate = %v, want ok %v", tt.proxies, err, tt.ok)
		}
	}
}

// TestValidateNamesEveryProblem: the defaults are valid, zero is not a default, and Validate
// reports all the problems of a configuration at once.
func TestValidateNamesEveryProblem(t *testing.T) {
	for _, cfg := range []Config{DefaultConfig(), LoopbackConfig(t.TempDir())} {
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", cfg.ServerName, err)
		}
	}
	tests := []struct {
		name   string
		change func(*Config)
		want   []string
	}{
		{"zero config", func(c *Config) { *c = Config{} }, []string{"server name", "data directory", "challenge lifetime", "http address", "raft address",
			"max voters 0", "raft heartbeat timeout 0s", "raft commit timeout 0s", "max connections per IP 0", "dead node grace 0s",
			"ping interval 0s", "federation catch-up window 0s", "exchange pull interval 0s", "channel expiry", "exchange page size 0", "send queue 0", "version", "account registration: 0 a client address per hour",
			"rejoin max age 0s", "server info \"\""}},
		{"registration password longer than a REGISTER line allows", func(c *Config) { c.AccountRegistration.MinPassword = 401 },
			[]string{"passwords of at least 401 bytes"}},
		{"registration e-mail without a sender, TLS mode or registration", func(c *Config) {
			c.AccountRegistration.Email.Relay.Addr, c.AccountRegistration.Email.Relay.TLS = "127.0.0.1:25", "ssl"
		}, []string{"sender \"\" is not an e-mail address", "TLS mode \"ssl\"", "--account-registration is off"}},
		{"registration codes out of bounds", func(c *Config) {
			c.AccountRegistration.Enabled = true
			c.AccountRegistration.Email.Relay = mail.Config{Addr: "127.0.0.1:25", From: "irc@example.com"}
			c.AccountRegistration.Email.CodeTTL, c.AccountRegistration.Email.MaxAttempts = 25*time.Hour, 0
		}, []string{"valid 25h0m0s for 0 attempts"}},
		{"rejoin max age not positive", func(c *Config) { c.Rejoin, c.RejoinMaxAge = true, -time.Hour }, []string{"rejoin max age -1h0m0s"}},
		{"server info too long", func(c *Config) { c.ServerInfo = strings.Repeat("x", MaxServerInfo+1) }, []string{"server info", "1 to 64 bytes"}},
		{"server info with a line break", func(c *Config) { c.ServerInfo = "two\r\nlines" }, []string{"server info"}},
		{"server info that is not UTF-8", func(c *Config) { c.ServerInfo = "\xff" }, []string{"server info"}},
		{"join history below -1", func(c *Config) { c.JoinHistory = -2 }, []string{"join history -2"}},
		{"tagmsg persist tags that are no client tags", func(c *Config) { c.TagmsgPersist = []string{"+draft/persist", "persist", "+", "+a b", "+/x", "+v/"} },
			[]string{`tag "persist"`, `tag "+"`, `tag "+a b"`, `tag "+/x"`, `tag "+v/"`}},
		{"several at once", func(c *Config) {
			c.MaxVoters, c.ChallengeTTL, c.Raft.CommitTimeout, c.Join = 4, 2*time.Minute, 0, []string{"a:1"}
		}, []string{"max voters 4", "challenge lifetime 2m0s", "raft commit timeout 0s", "--join needs --gossip-addr", "--join needs --cluster-secret"}},
		{"bad address", func(c *Config) { c.IRCAddr = "nowhere" }, []string{`irc address "nowhere"`}},
		{"lease longer than heartbeat", func(c *Config) { c.Raft.HeartbeatTimeout = 100 * time.Millisecond }, []string{"lease timeout 250ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.change(&c)
			err := c.Validate()
			if err == nil {
				t.Fatal("Validate accepted it")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate = %v\nwant it to name %q", err, w)
				}
			}
		})
	}
}

// TestStartKeepsItsOwnConfig: changing the caller's lists after derived (as Start does) changes
// nothing in the node's copy.
func TestStartKeepsItsOwnConfig(t *testing.T) {
	c := DefaultConfig()
	c.Join, c.Opers = []string{"a:1"}, map[string]string{"op": "x"}
	d := c.derived()
	c.Join[0], c.Opers["op"] = "b:2", "y"
	if d.Join[0] != "a:1" || d.Opers["op"] != "x" || d.NodeName != c.ServerName {
		t.Errorf("derived config follows the caller's: join %v opers %v node %q", d.Join, d.Opers, d.NodeName)
	}
}
