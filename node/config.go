package node

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/palaver-chat/palaver/federation/peering"
	"github.com/palaver-chat/palaver/gateway/assist"
	"github.com/palaver-chat/palaver/gateway/coord"
	"github.com/palaver-chat/palaver/gateway/irc"
	"github.com/palaver-chat/palaver/gateway/mail"
	"github.com/palaver-chat/palaver/gateway/media"
	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/raft"
	"github.com/palaver-chat/palaver/sfu"
)

// Config is everything a node needs to start. DefaultConfig is the one place its defaults are
// written (the embedded single-node node that `make run` starts; `palaver serve` takes its flag
// defaults from it): build a Config from it and change what differs. Zero is not a default:
// Validate refuses a zero where a value is needed. Only the fields that say so derive an empty
// value from others (NodeName, BaseURL, MaxHTTPConnsPerIP). Start keeps its own copy, so changing
// a Config after Start changes nothing.
//
// A surface added to the node brings its options as one field here: its package's Options
// struct, with a Defaults constructor (called by DefaultConfig) and a Flags method (called by
// `palaver serve`).
type Config struct {
	ServerName string // IRC server name and did:web host name
	NodeName   string // Raft server id; empty: the server name
	DataDir    string

	IRCAddr  string // plain IRC; empty disables
	TLSAddr  string // IRC over TLS; empty disables
	HTTPAddr string // REST API and IRC over WebSocket at /irc
	RaftAddr string // Raft transport
	BaseURL  string // public URL of the HTTP server; default http://<HTTPAddr>
	// Raft is the cluster's Raft timing: a named profile (raft.Profile; DefaultConfig takes
	// raft.ProfileProduction, in-process tests raft.ProfileTest), single values overridden by
	// the --raft-* flags. Every node of a cluster should run the same.
	Raft raft.Timing
	// PprofAddr, when set, serves net/http/pprof on a listener of its own (keep it on loopback).
	PprofAddr string

	TLSCertFile, TLSKeyFile string // when empty, a self-signed certificate is generated in DataDir/tls

	// Clustering. With Join empty and no GossipAddr the node is a one-node cluster. With GossipAddr
	// set it gossips (memberlist) and serves the cluster RPC on ClusterAddr; with Join set it joins
	// the cluster of any listed member instead of bootstrapping.
	Join                    []string
	GossipAddr, ClusterAddr string
	RaftAdvertise           string
	GossipAdvertise         string
	ClusterAdvertise        string
	// ClusterSecret is the cluster secret file (raft/trust): the cluster's CAs and gossip keys.
	// Required with Join; without it a clustered node uses <DataDir>/cluster/secret, creating it
	// when missing (the first node of a cluster). Unused by an unclustered node.
	ClusterSecret string
	MaxVoters     int           // 3 or 5
	DeadNodeGrace time.Duration // how long a node may stay dead before the leader removes it

	// ServerInfo describes the node in IRC LINKS (364 RPL_LINKS); gossiped, so that the other
	// nodes list it with its own. At most MaxServerInfo bytes of printable UTF-8.
	ServerInfo string

	MOTDFile string            // message of the day, one line per line; empty: none (422 ERR_NOMOTD)
	TOSFile  string            // terms of service served at /tos; empty: the built-in terms
	Opers    map[string]string // OPER name → password
	OperDIDs []string
	NoGuests bool
	// AccountRegistration offers draft/account-registration: REGISTER creates hosted accounts
	// (did:web:<server>:u:<name>). Off unless set.
	AccountRegistration irc.Registration
	// SMTPPasswordFile holds (its first line) the password of AccountRegistration.Email.Relay's
	// login; SMTPCAFile the PEM CAs its certificate is checked against (default: the system's).
	SMTPPasswordFile string
	SMTPCAFile       string
	// Metadata3 offers draft/metadata-3 on IRC beside draft/metadata-2. Off unless set: it makes
	// CAP LS span two lines, which freeq's JavaScript SDK does not negotiate.
	Metadata3 bool
	// Rejoin rejoins an IRC connection that logs in as an account to the channels the account's
	// sessions were in when they ended, remembered for RejoinMaxAge (gateway/irc rejoin.go). Off
	// unless set: freeq's clients join their channels themselves.
	Rejoin       bool
	RejoinMaxAge time.Duration
	// IRCPasswordFile holds the connection password (its first line) every IRC client must send
	// with PASS before registering; empty: none.
	IRCPasswordFile string

	PLCDirectory   string
	ChallengeTTL   time.Duration
	MaxConnsPerIP  int
	AllowedOrigins []string
	JoinHistory    int // messages replayed on JOIN to a client without draft/chathistory; 0 or -1: none
	// TagmsgPersist are the client tags that keep a TAGMSG in history, for draft/event-playback
	// readers (chat.Config.PersistTags); empty: every TAGMSG is relayed live only.
	TagmsgPersist   []string
	NoFloodLimits   bool // benchmarks only
	AllowPrivateDID bool // tests only: let did:web and PDS lookups reach loopback and private addresses

	// MaxHTTPConnsPerIP caps the concurrent HTTP connections of one client (an IPv4 address or
	// an IPv6 /64) on the HTTP listener, WebSockets included; over it a connection is closed at
	// accept; -1 is unlimited. WebSocket IRC connections count here too, so 0 derives a cap that
	// leaves room for MaxConnsPerIP of them: 64, or MaxConnsPerIP + 32 when that is more, and
	// unlimited when MaxConnsPerIP is.
	MaxHTTPConnsPerIP int
	// TrustedProxies are the reverse proxies (IP or CIDR) whose X-Real-IP / X-Forwarded-For
	// name the HTTP client; from any other peer, loopback included, those headers are ignored.
	TrustedProxies []string
	// HTTPLimits bounds HTTP requests (read, header and idle timeouts, header size); zero fields
	// take rest's defaults. No flag: tests shorten them.
	HTTPLimits rest.HTTPLimits
	// AV configures calls: --no-av, the forwarding unit's UDP address and public IPs.
	AV sfu.Options

	// Coord configures the coordination surface (ACT, tasks, manifests, actors).
	Coord coord.Options

	// PeerKeyRetry is how long a did:web document that lacked a key is not asked again.
	PeerKeyRetry time.Duration
	// KeySweepEvery is how often sessions whose signing key expired are closed.
	KeySweepEvery time.Duration
	// SigningKeyLifetime is how long a client's MSGSIG key counts after registration.
	SigningKeyLifetime time.Duration

	Version string

	// IRC keepalive: idle time before the server pings a client, and how long it waits for the
	// answer. SendQBytes is each connection's output budget.
	PingAfter, PingTimeout time.Duration
	SendQBytes             int

	// Clock replaces time.Now for SASL challenge lifetimes and registration codes (tests only).
	Clock func() time.Time

	// Federation with other servers (federation/peering): the allowed peers with their trust
	// levels, the channels linked with each, and the first retry of a failed envelope.
	Peers               []peering.Peer
	Links               []peering.Link
	FederationSendEvery time.Duration
	// FederationCatchUpWindow bounds catch-up: events older than it are not sent to a peer.
	FederationCatchUpWindow time.Duration

	// The exchange of chat events between the cluster's nodes: how often each node is pulled
	// beside its stream, the rows of a pull or stream frame, and the pushed events queued per node.
	ExchangePullEvery                   time.Duration
	ExchangePageSize, ExchangeQueueSize int
	// PeerAllowPrivate lets federation reach configured peers at private and loopback addresses
	// (--peer-allow-private); the SSRF guard otherwise refuses them.
	PeerAllowPrivate bool

	// Empty channels expire (the leader sweeps every ChannelSweepEvery): unowned ones after
	// UnownedChannelExpiry, founded ones after FoundedChannelExpiry; negative keeps them.
	ChannelSweepEvery, UnownedChannelExpiry, FoundedChannelExpiry time.Duration

	// Media is the upload, media proxy and encryption-key surface (gateway/media; node/media.go).
	Media media.Options
	// Assist configures the assistance tools' language model provider (/agent/session).
	Assist assist.Options

	// Faults injects network partitions and slow disks (the testcluster harness only; nil: the
	// real network and disk). See faults.go.
	Faults *Faults
}

// DefaultConfig is the configuration of the embedded single-node default, and the defaults of
// `palaver serve`'s flags.
func DefaultConfig() Config {
	return Config{
		ServerName: "localhost",
		ServerInfo: "Palaver",
		AccountRegistration: irc.Registration{PerAddressPerHour: irc.DefaultRegistrationsPerHour,
			MinPassword: irc.DefaultAccountMinPassword,
			Email: irc.EmailVerification{Relay: mail.Config{TLS: mail.TLSStartTLS},
				CodeTTL: irc.DefaultCodeTTL, MaxAttempts: irc.DefaultCodeAttempts}},
		RejoinMaxAge: irc.DefaultRejoinMaxAge,
		DataDir:      "./data",
		IRCAddr:      "127.0.0.1:6667",
		TLSAddr:      "127.0.0.1:6697",
		HTTPAddr:     "127.0.0.1:8080",
		RaftAddr:     "127.0.0.1:6670",
		Raft:         raft.MustProfile(raft.ProfileProduction),

		MaxVoters:     3,
		DeadNodeGrace: 60 * time.Second,

		PLCDirectory:  "https://plc.directory",
		ChallengeTTL:  60 * time.Second,
		MaxConnsPerIP: 20,
		JoinHistory:   25,
		TagmsgPersist: append([]string(nil), chat.DefaultPersistTags...),

		PeerKeyRetry:       60 * time.Second,
		KeySweepEvery:      60 * time.Second,
		SigningKeyLifetime: 90 * 24 * time.Hour,
		Version:            "0.1.0",

		Assist: assist.Defaults(),

		PingAfter:   30 * time.Second,
		PingTimeout: 60 * time.Second,
		SendQBytes:  256 << 10,

		FederationSendEvery:     time.Second,
		FederationCatchUpWindow: 24 * time.Hour,
		ExchangePullEvery:       time.Second,
		ExchangePageSize:        500,
		ExchangeQueueSize:       4096,

		ChannelSweepEvery:    time.Hour,
		UnownedChannelExpiry: 7 * 24 * time.Hour,
		FoundedChannelExpiry: 90 * 24 * time.Hour,

		Coord: coord.Defaults(),
		Media: media.Defaults(),
		AV:    sfu.Defaults(),
	}
}

// LoopbackConfig is the node that in-process tests and benchmarks start: server palaver.test
// with its data in dir, IRC, HTTP and Raft on loopback ports the system picks (no TLS listener),
// the Raft timing of raft.ProfileTest, and no connection or flood limits.
func LoopbackConfig(dir string) Config {
	cfg := DefaultConfig()
	cfg.ServerName, cfg.DataDir = "palaver.test", dir
	cfg.IRCAddr, cfg.TLSAddr, cfg.HTTPAddr, cfg.RaftAddr = "127.0.0.1:0", "", "127.0.0.1:0", "127.0.0.1:0"
	cfg.AV.UDPAddr, cfg.AV.AllowPrivateCandidates = "127.0.0.1:0", true
	cfg.Raft = raft.MustProfile(raft.ProfileTest)
	cfg.MaxConnsPerIP, cfg.NoFloodLimits = -1, true
	return cfg
}

// derived returns the configuration with the values derived from others filled in: NodeName
// and MaxHTTPConnsPerIP when empty (BaseURL is derived once the HTTP listener is open), and its
// own copies of the lists and maps, so that the caller changing them later changes nothing.
func (c Config) derived() Config {
	if c.NodeName == "" {
		c.NodeName = c.ServerName
	}
	if c.MaxHTTPConnsPerIP == 0 {
		c.MaxHTTPConnsPerIP = max(64, c.MaxConnsPerIP+32)
		if c.MaxConnsPerIP < 0 {
			c.MaxHTTPConnsPerIP = -1
		}
	}
	c.Join = slices.Clone(c.Join)
	c.Opers = maps.Clone(c.Opers)
	c.OperDIDs = slices.Clone(c.OperDIDs)
	c.AllowedOrigins = slices.Clone(c.AllowedOrigins)
	c.TrustedProxies = slices.Clone(c.TrustedProxies)
	c.TagmsgPersist = slices.Clone(c.TagmsgPersist)
	c.Peers = slices.Clone(c.Peers)
	c.Links = slices.Clone(c.Links)
	return c
}

// Validate reports every problem with a configuration, each naming its setting.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.ServerName == "" || strings.ContainsAny(c.ServerName, " /:@!") {
		bad("server name %q: must be a host name", c.ServerName)
	}
	if !validServerInfo(c.ServerInfo) {
		bad("server info %q: must be 1 to %d bytes of printable UTF-8", c.ServerInfo, MaxServerInfo)
	}
	if c.DataDir == "" {
		bad("data directory: required")
	}
	if c.ChallengeTTL < time.Second || c.ChallengeTTL > 60*time.Second {
		bad("challenge lifetime %s: must be between 1s and 60s", c.ChallengeTTL)
	}
	for _, l := range []struct {
		name, addr string
		required   bool
	}{{"irc", c.IRCAddr, false}, {"tls", c.TLSAddr, false}, {"http", c.HTTPAddr, true}, {"raft", c.RaftAddr, true}} {
		if l.addr == "" {
			if l.required {
				bad("%s address is required", l.name)
			}
			continue
		}
		if _, _, err := net.SplitHostPort(l.addr); err != nil {
			bad("%s address %q: %w", l.name, l.addr, err)
		}
	}
	if len(c.Join) > 0 && c.GossipAddr == "" {
		bad("--join needs --gossip-addr (and --cluster-addr): a joining node gossips")
	}
	if len(c.Join) > 0 && c.ClusterSecret == "" && !c.enrolled() {
		bad("--join needs --cluster-secret FILE: the cluster's secret file (the first node wrote it to <its data>/cluster/secret); only nodes holding it can join (a node that joined once runs without it)")
	}
	if c.GossipAddr != "" && c.ClusterAddr == "" {
		bad("--gossip-addr needs --cluster-addr for forwarded writes")
	}
	if c.MaxVoters != 3 && c.MaxVoters != 5 {
		bad("max voters %d: must be 3 or 5", c.MaxVoters)
	}
	if err := c.Raft.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.PLCDirectory == "" {
		bad("PLC directory: required")
	}
	if c.MaxConnsPerIP == 0 || c.MaxConnsPerIP < -1 {
		bad("max connections per IP %d: must be positive, or -1 for unlimited", c.MaxConnsPerIP)
	}
	if c.MaxHTTPConnsPerIP < -1 {
		bad("max HTTP connections per IP %d: must be positive, 0 to derive it, or -1 for unlimited", c.MaxHTTPConnsPerIP)
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{
		{"dead node grace", c.DeadNodeGrace}, {"peer key retry", c.PeerKeyRetry}, {"key sweep interval", c.KeySweepEvery},
		{"signing key lifetime", c.SigningKeyLifetime}, {"ping interval", c.PingAfter}, {"ping timeout", c.PingTimeout},
		{"federation send interval", c.FederationSendEvery}, {"federation catch-up window", c.FederationCatchUpWindow},
		{"channel sweep interval", c.ChannelSweepEvery}, {"exchange pull interval", c.ExchangePullEvery},
	} {
		if d.d <= 0 {
			bad("%s %s: must be positive", d.name, d.d)
		}
	}
	if c.UnownedChannelExpiry == 0 || c.FoundedChannelExpiry == 0 {
		bad("channel expiry %s, founded channel expiry %s: must be positive, or negative to keep empty channels", c.UnownedChannelExpiry, c.FoundedChannelExpiry)
	}
	if r := c.AccountRegistration; r.PerAddressPerHour < 1 || r.MinPassword < 1 || r.MinPassword > irc.MaxAccountPassword {
		bad("account registration: %d a client address per hour, passwords of at least %d bytes: must be positive, and at most %d bytes",
			r.PerAddressPerHour, r.MinPassword, irc.MaxAccountPassword)
	}
	if e := c.AccountRegistration.Email; e.Configured() {
		if err := e.Relay.Check(); err != nil {
			bad("account registration e-mail: %v", err)
		}
		if !c.AccountRegistration.Enabled {
			bad("account registration e-mail: --account-registration is off")
		}
		if e.CodeTTL < time.Minute || e.CodeTTL > 24*time.Hour || e.MaxAttempts < 1 || e.MaxAttempts > 20 {
			bad("account registration codes: valid %s for %d attempts: must be 1m to 24h, 1 to 20 attempts", e.CodeTTL, e.MaxAttempts)
		}
	}
	if c.RejoinMaxAge <= 0 {
		bad("rejoin max age %s: must be positive", c.RejoinMaxAge)
	}
	if c.JoinHistory < -1 {
		bad("join history %d: must be 0 or more (0 or -1: no replay)", c.JoinHistory)
	}
	for _, tag := range c.TagmsgPersist {
		if !validClientTagName(tag) {
			bad("TAGMSG persist tag %q: must be a client tag name (+ then letters, digits, '-', '.', '/')", tag)
		}
	}
	if c.ExchangePageSize <= 0 || c.ExchangeQueueSize <= 0 {
		bad("exchange page size %d, queue size %d: must be positive", c.ExchangePageSize, c.ExchangeQueueSize)
	}
	if c.SendQBytes <= 0 {
		bad("send queue %d bytes: must be positive", c.SendQBytes)
	}
	if c.Version == "" {
		bad("version: required")
	}
	for _, p := range c.TrustedProxies {
		if err := rest.ValidTrustedProxy(p); err != nil {
			bad("--trusted-proxy: %w", err)
		}
	}
	return errors.Join(errs...)
}

// validClientTagName reports whether tag is a client-only tag's name (IRCv3 message-tags: "+",
// an optional vendor and "/", then a key of letters, digits and hyphens; vendors are host names).
func validClientTagName(tag string) bool {
	name, ok := strings.CutPrefix(tag, "+")
	if !ok || name == "" || len(tag) > 100 {
		return false
	}
	vendor, key, hasVendor := strings.Cut(name, "/")
	if !hasVendor {
		key, vendor = vendor, ""
	}
	if key == "" || (hasVendor && vendor == "") {
		return false
	}
	for _, r := range key {
		if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	for _, r := range vendor {
		if !(r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// rejoin is the gateway's Rejoin: the max age when rejoining is on, 0 when off.
func (c Config) rejoin() time.Duration {
	if !c.Rejoin {
		return 0
	}
	return c.RejoinMaxAge
}

// MaxServerInfo bounds Config.ServerInfo: it travels in the node's gossip metadata, which
// memberlist limits to 512 bytes.
const MaxServerInfo = 64

// validServerInfo reports whether info is 1 to MaxServerInfo bytes of printable UTF-8.
func validServerInfo(info string) bool {
	if info == "" || len(info) > MaxServerInfo || !utf8.ValidString(info) {
		return false
	}
	for _, r := range info {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
