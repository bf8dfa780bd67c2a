package irc_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/xdg-go/scram"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/gateway/rest/contracttest"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
	"github.com/palaver-chat/palaver/testcluster/irctest"
)

// saslEnd is the last line of a login: the bearer NOTICE after 903, or a failure.
func saslEnd(m ircmsg.Message) bool {
	switch m.Command {
	case "904", "905", "906", "ERROR":
		return true
	}
	return m.Command == "NOTICE" && strings.HasPrefix(m.Param(1), "API-BEARER ")
}

// plainLogin runs AUTHENTICATE PLAIN on an unregistered connection and returns the lines up to
// its end (saslEnd).
func plainLogin(t *testing.T, c *ircclient.Client, authzid, authcid, password string) []ircmsg.Message {
	t.Helper()
	sendLines(t, c, "AUTHENTICATE PLAIN")
	expectParams(t, c, "AUTHENTICATE", "+")
	payload := base64.StdEncoding.EncodeToString([]byte(authzid + "\x00" + authcid + "\x00" + password))
	sendLines(t, c, "AUTHENTICATE "+payload)
	return readUntil(t, c, "the end of SASL", saslEnd)
}

// scramLogin runs AUTHENTICATE SCRAM-SHA-256 with xdg-go/scram's client and returns the lines
// up to its end.
func scramLogin(t *testing.T, c *ircclient.Client, user, password string) []ircmsg.Message {
	t.Helper()
	client, err := scram.SHA256.NewClient(user, password, "")
	if err != nil {
		t.Fatal(err)
	}
	conv := client.NewConversation()
	sendLines(t, c, "AUTHENTICATE SCRAM-SHA-256")
	expectParams(t, c, "AUTHENTICATE", "+")
	var got []ircmsg.Message
	server := ""
	for {
		out, err := conv.Step(server)
		if err != nil {
			t.Fatalf("SCRAM client after %q: %v", server, err)
		}
		line := "AUTHENTICATE +"
		if out != "" {
			line = "AUTHENTICATE " + base64.StdEncoding.EncodeToString([]byte(out))
		}
		sendLines(t, c, line)
		if conv.Done() {
			if !conv.Valid() {
				t.Fatal("the server's signature did not verify")
			}
			return append(got, readUntil(t, c, "the end of SASL", saslEnd)...)
		}
		lines := readUntil(t, c, "a SCRAM step", func(m ircmsg.Message) bool { return m.Command == "AUTHENTICATE" || saslEnd(m) })
		got = append(got, lines...)
		last := lines[len(lines)-1]
		if last.Command != "AUTHENTICATE" {
			return got
		}
		raw, err := base64.StdEncoding.DecodeString(last.Param(0))
		if err != nil {
			t.Fatalf("server message %q: %v", last.Param(0), err)
		}
		server = string(raw)
	}
}

// loggedInAs returns the account of the 900 among lines, "" without one.
func loggedInAs(lines []ircmsg.Message) string {
	for _, m := range lines {
		if m.Command == "900" {
			return m.Param(2)
		}
	}
	return ""
}

func hasCommand(lines []ircmsg.Message, command string) bool {
	for _, m := range lines {
		if m.Command == command {
			return true
		}
	}
	return false
}

// bearerOf returns the API-BEARER token among lines.
func bearerOf(lines []ircmsg.Message) string {
	for _, m := range lines {
		if tok, ok := strings.CutPrefix(m.Param(1), "API-BEARER "); m.Command == "NOTICE" && ok {
			return tok
		}
	}
	return ""
}

// mintPassword sends PASSWORD ADD name on c and returns the password.
func mintPassword(t *testing.T, c *ircclient.Client, name string) string {
	t.Helper()
	sendLines(t, c, "PASSWORD ADD "+name)
	m := expect(t, c, "NOTE", "PASSWORD", "ADDED", name)
	if len(m.Params) < 5 || len(m.Param(3)) != 32 {
		t.Fatalf("PASSWORD ADDED line %q", m.String())
	}
	return m.Param(3)
}

// finishRegistration completes a connection's registration and returns its welcome.
func finishRegistration(t *testing.T, c *ircclient.Client, nick string) ircmsg.Message {
	t.Helper()
	sendLines(t, c, "NICK "+nick, "USER "+nick+" 0 * :"+nick, "CAP END")
	return expect(t, c, "001")
}

func TestIRCClientPasswords(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	owner, res := login(t, n, "alice")
	did := res.DID

	t.Run("CAP LS and 908 list the password mechanisms", func(t *testing.T) {
		c := dial(t, n)
		sendLines(t, c, "CAP LS 302")
		_, caps := expectCapLS(t, c)
		if !strings.Contains(strings.Join(caps, " "), "sasl=ATPROTO-CHALLENGE,PLAIN,SCRAM-SHA-256") {
			t.Fatalf("caps %q", caps)
		}
		sendLines(t, c, "AUTHENTICATE FOO")
		expectParams(t, c, "908", "*", "ATPROTO-CHALLENGE,PLAIN,SCRAM-SHA-256", "are available SASL mechanisms")
		expect(t, c, "904")
	})

	pw := mintPassword(t, owner, "irssi")

	t.Run("PLAIN by DID and by owned nick, SCRAM by DID", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			login func(c *ircclient.Client) []ircmsg.Message
		}{
			{"plain did", func(c *ircclient.Client) []ircmsg.Message { return plainLogin(t, c, "", did, pw) }},
			{"plain nick", func(c *ircclient.Client) []ircmsg.Message { return plainLogin(t, c, "", "ALICE", pw) }},
			{"plain authzid", func(c *ircclient.Client) []ircmsg.Message { return plainLogin(t, c, did, "alice", pw) }},
			{"scram did", func(c *ircclient.Client) []ircmsg.Message { return scramLogin(t, c, did, pw) }},
			{"scram nick", func(c *ircclient.Client) []ircmsg.Message { return scramLogin(t, c, "alice", pw) }},
		} {
			c := dial(t, n)
			sendLines(t, c, "CAP LS 302", "CAP REQ :sasl")
			lines := tc.login(c)
			if loggedInAs(lines) != did || !hasCommand(lines, "903") || !strings.HasPrefix(bearerOf(lines), "pw-") {
				t.Fatalf("%s: %v", tc.name, lines)
			}
			w := finishRegistration(t, c, "alice-"+strings.ReplaceAll(tc.name, " ", ""))
			if !strings.Contains(w.Param(1), "authenticated as "+did) {
				t.Fatalf("%s: welcome %q", tc.name, w.String())
			}
			// The bearer of a password login reads the REST API as the DID.
			resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/api/v1/favorites", bearerOf(lines), nil)
			if resp.StatusCode != 200 {
				t.Fatalf("%s: favorites with the bearer: %d %s", tc.name, resp.StatusCode, body)
			}
			// A password login may not mint further passwords.
			sendLines(t, c, "PASSWORD ADD more")
			expect(t, c, "FAIL", "PASSWORD", "NEED_STRONGER_LOGIN")
			c.Close()
		}
	})

	t.Run("bad passwords get 904 and change nothing", func(t *testing.T) {
		c := dial(t, n)
		sendLines(t, c, "CAP LS 302", "CAP REQ :sasl")
		for _, tc := range []struct{ authcid, pw string }{{did, "wrong"}, {"did:plc:nobody", pw}} {
			lines := plainLogin(t, c, "", tc.authcid, tc.pw)
			if loggedInAs(lines) != "" || !hasCommand(lines, "904") {
				t.Fatalf("%s: %v", tc.authcid, lines)
			}
		}
		if lines := scramLogin(t, c, did, "wrong"); !hasCommand(lines, "904") {
			t.Fatalf("scram: %v", lines)
		}
		// The third counted failure closes the connection.
		expectParams(t, c, "ERROR", "Too many SASL failures")

		c = dial(t, n)
		sendLines(t, c, "AUTHENTICATE PLAIN")
		expectParams(t, c, "AUTHENTICATE", "+")
		sendLines(t, c, "AUTHENTICATE "+strings.Repeat("A", 500))
		expectParams(t, c, "905", "*", "SASL message too long")
		w := finishRegistration(t, c, "stranger")
		if !strings.Contains(w.Param(1), "(guest)") {
			t.Fatalf("welcome after failures: %q", w.String())
		}
	})

	t.Run("LIST and DEL; a revoked password no longer logs in", func(t *testing.T) {
		sendLines(t, owner, "PASSWORD LIST")
		expect(t, owner, "NOTE", "PASSWORD", "ENTRY", "irssi")
		expect(t, owner, "NOTE", "PASSWORD", "END")
		sendLines(t, owner, "PASSWORD ADD irssi")
		expect(t, owner, "FAIL", "PASSWORD", "PASSWORD_EXISTS", "irssi")
		sendLines(t, owner, "PASSWORD ADD bad/name")
		expect(t, owner, "FAIL", "PASSWORD", "INVALID_PARAMS")
		sendLines(t, owner, "PASSWORD DEL irssi")
		expect(t, owner, "NOTE", "PASSWORD", "REVOKED", "irssi")
		sendLines(t, owner, "PASSWORD DEL irssi")
		expect(t, owner, "FAIL", "PASSWORD", "NO_SUCH_PASSWORD", "irssi")
		c := dial(t, n)
		if lines := plainLogin(t, c, "", did, pw); loggedInAs(lines) != "" || !hasCommand(lines, "904") {
			t.Fatalf("revoked password: %v", lines)
		}
	})

	t.Run("guests cannot manage passwords", func(t *testing.T) {
		g, _ := guest(t, n, "visitor")
		sendLines(t, g, "PASSWORD LIST")
		expect(t, g, "FAIL", "PASSWORD", "ACCOUNT_REQUIRED")
	})
}

// TestIRCPasswordFloodLimit checks that AUTHENTICATE lines are rate-limited for the password
// mechanisms as for ATPROTO-CHALLENGE: past the burst, a line is answered 904 and not run.
func TestIRCPasswordFloodLimit(t *testing.T) {
	n := startNode(t, t.TempDir(), func(c *Config) { c.NoFloodLimits = false })
	c := dial(t, n)
	for range 20 {
		sendLines(t, c, "AUTHENTICATE PLAIN")
	}
	expect(t, c, "904", "SASL authentication failed: too many AUTHENTICATE lines; slow down")
}

// TestIRCPasswordRevokedOnEveryNode mints a password on one node of a cluster, logs in with it
// on the others, revokes it, and checks that no node lets it in afterwards.
func TestIRCPasswordRevokedOnEveryNode(t *testing.T) {
	nodes := startCluster(t)
	owner, res := login(t, nodes[0], "carol")
	pw := mintPassword(t, owner, "phone")
	for i, n := range nodes {
		var lines []ircmsg.Message
		eventually(t, "the password logs in on node "+string(rune('a'+i)), func() bool {
			c := dial(t, n)
			defer c.Close()
			lines = plainLogin(t, c, "", res.DID, pw)
			return loggedInAs(lines) == res.DID
		})
	}
	sendLines(t, owner, "PASSWORD DEL phone")
	expect(t, owner, "NOTE", "PASSWORD", "REVOKED", "phone")
	for i, n := range nodes {
		eventually(t, "node "+string(rune('a'+i))+" refuses the revoked password", func() bool {
			c := dial(t, n)
			defer c.Close()
			lines := scramLogin(t, c, res.DID, pw)
			return loggedInAs(lines) == "" && hasCommand(lines, "904")
		})
	}
}

// registerReply sends REGISTER and returns the REGISTER or FAIL REGISTER line that answers it.
func registerReply(t *testing.T, c *ircclient.Client, line string) ircmsg.Message {
	t.Helper()
	sendLines(t, c, line)
	return irctest.ExpectMatch(t, c, "the answer to "+line, func(m ircmsg.Message) bool {
		return m.Command == "REGISTER" || (m.Command == "FAIL" && m.Param(0) == "REGISTER")
	})
}

func TestIRCAccountRegistration(t *testing.T) {
	n := startNode(t, t.TempDir(), func(c *Config) {
		c.AccountRegistration.Enabled, c.AccountRegistration.BeforeConnect = true, true
		c.AccountRegistration.PerAddressPerHour = 5
	})
	const did = "did:web:palaver.test:u:bar"

	t.Run("the cap is offered with before-connect", func(t *testing.T) {
		c := dial(t, n)
		sendLines(t, c, "CAP LS 302")
		_, caps := expectCapLS(t, c)
		if !strings.Contains(" "+strings.Join(caps, " ")+" ", " draft/account-registration=before-connect ") {
			t.Fatalf("caps %q", caps)
		}
		sendLines(t, c, "CAP REQ :draft/account-registration")
		expectParams(t, c, "CAP", "*", "ACK", "draft/account-registration")
	})

	t.Run("REGISTER after connecting logs in and owns the nick", func(t *testing.T) {
		c, _ := guest(t, n, "bar", "draft/account-registration")
		m := registerReply(t, c, "REGISTER * * shivarampassphrase")
		if m.Command != "REGISTER" || m.Param(0) != "SUCCESS" || m.Param(1) != "bar" {
			t.Fatalf("REGISTER: %q", m.String())
		}
		expect(t, c, "NOTICE", "*")
		if !strings.HasPrefix(bearerOf(c.Seen()), "pw-") || loggedInAs(c.Seen()) != did {
			t.Fatalf("no login: %v", lastSeen(c))
		}
		// The hosted account may mint client passwords with its password login.
		mintPassword(t, c, "weechat")
		sendLines(t, c, "REGISTER * * anotherpassphrase")
		expect(t, c, "FAIL", "REGISTER", "ALREADY_AUTHENTICATED")
		sendLines(t, c, "VERIFY bar 1234")
		expect(t, c, "FAIL", "VERIFY", "ALREADY_AUTHENTICATED")
	})

	t.Run("the account's password logs in by name and by DID", func(t *testing.T) {
		for _, login := range []string{"bar", "BAR", did} {
			c := dial(t, n)
			if lines := plainLogin(t, c, "", login, "shivarampassphrase"); loggedInAs(lines) != did {
				t.Fatalf("PLAIN %s: %v", login, lines)
			}
			c = dial(t, n)
			if lines := scramLogin(t, c, login, "shivarampassphrase"); loggedInAs(lines) != did {
				t.Fatalf("SCRAM %s: %v", login, lines)
			}
		}
	})

	t.Run("REGISTER before connecting", func(t *testing.T) {
		c := dial(t, n)
		sendLines(t, c, "CAP LS 302", "CAP REQ :draft/account-registration", "NICK early")
		m := registerReply(t, c, "REGISTER * * shivarampassphrase")
		if m.Command != "REGISTER" || m.Param(0) != "SUCCESS" {
			t.Fatalf("REGISTER: %q", m.String())
		}
		w := finishRegistration(t, c, "early")
		if !strings.Contains(w.Param(1), "authenticated as did:web:palaver.test:u:early") {
			t.Fatalf("welcome %q", w.String())
		}
	})

	t.Run("refusals change nothing", func(t *testing.T) {
		held, _ := guest(t, n, "root")
		defer held.Close()
		for _, tc := range []struct {
			nick, line, code string
		}{
			{"", "REGISTER * * shivarampassphrase", "NEED_NICK"},
			{"root", "REGISTER * * shivarampassphrase", "ACCOUNT_EXISTS"},
			{"bar", "REGISTER * * shivarampassphrase", "ACCOUNT_EXISTS"},
			{"zed", "REGISTER foo * shivarampassphrase", "ACCOUNT_NAME_MUST_BE_NICK"},
			{"zed", "REGISTER zed * short", "WEAK_PASSWORD"},
			{"zed", "REGISTER zed * " + strings.Repeat("p", 401), "UNACCEPTABLE_PASSWORD"},
			{"zed[1]", "REGISTER * * shivarampassphrase", "BAD_ACCOUNT_NAME"},
		} {
			c := dial(t, n)
			if tc.nick != "" {
				sendLines(t, c, "NICK "+tc.nick)
			}
			m := registerReply(t, c, tc.line)
			if m.Command != "FAIL" || m.Param(1) != tc.code {
				t.Fatalf("%s %s: %q", tc.nick, tc.line, m.String())
			}
			c.Close()
		}
		c := dial(t, n)
		if lines := plainLogin(t, c, "", "zed", "shivarampassphrase"); loggedInAs(lines) != "" {
			t.Fatalf("a refused registration logs in: %v", lines)
		}
		c = dial(t, n)
		sendLines(t, c, "VERIFY zed 1234")
		expect(t, c, "FAIL", "VERIFY", "INVALID_CODE")
	})

	t.Run("registrations per address are limited", func(t *testing.T) {
		// Two registered above; three more fit in the hour, the next does not.
		for i, nick := range []string{"r1", "r2", "r3", "r4"} {
			c := dial(t, n)
			sendLines(t, c, "NICK "+nick)
			m := registerReply(t, c, "REGISTER * * shivarampassphrase")
			if ok := m.Command == "REGISTER"; ok != (i < 3) {
				t.Fatalf("registration %d: %q", i, m.String())
			}
			if i == 3 && m.Param(1) != "TEMPORARILY_UNAVAILABLE" {
				t.Fatalf("over the limit: %q", m.String())
			}
			c.Close()
		}
	})
}

func TestIRCAccountRegistrationOff(t *testing.T) {
	n := startNode(t, t.TempDir(), func(c *Config) { c.AccountRegistration.Enabled = true })
	off := startNode(t, t.TempDir(), nil)

	c := dial(t, off)
	sendLines(t, c, "CAP LS 302")
	if _, caps := expectCapLS(t, c); strings.Contains(strings.Join(caps, " "), "account-registration") {
		t.Fatalf("registration off, caps %q", caps)
	}
	sendLines(t, c, "NICK bar")
	if m := registerReply(t, c, "REGISTER * * shivarampassphrase"); m.Param(1) != "TEMPORARILY_UNAVAILABLE" {
		t.Fatalf("registration off: %q", m.String())
	}

	c = dial(t, n)
	sendLines(t, c, "CAP LS 302")
	_, caps := expectCapLS(t, c)
	if !strings.Contains(" "+strings.Join(caps, " ")+" ", " draft/account-registration ") {
		t.Fatalf("registration on without before-connect, caps %q", caps)
	}
	sendLines(t, c, "NICK bar")
	if m := registerReply(t, c, "REGISTER * * shivarampassphrase"); m.Param(1) != "COMPLETE_CONNECTION_REQUIRED" {
		t.Fatalf("before connecting: %q", m.String())
	}
}

// TestRESTClientPasswords mints, lists and revokes client passwords over REST, each answer
// checked against the served contract, and logs in with what it minted.
func TestRESTClientPasswords(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	base := "http://" + n.HTTPAddr()
	contract := contracttest.Fetch(t, base)
	_, res := login(t, n, "dora")
	call := func(method, path, token, body string, want int) []byte {
		t.Helper()
		var r io.Reader
		if body != "" {
			r = strings.NewReader(body)
		}
		resp, data := httpDo(t, method, base+path, token, r)
		contract.Check(t, method, base+path, resp, data)
		if resp.StatusCode != want {
			t.Fatalf("%s %s %s: %d %s, want %d", method, path, body, resp.StatusCode, data, want)
		}
		return data
	}
	var minted struct{ Name, Password, DID string }
	if err := json.Unmarshal(call("POST", "/api/v1/me/passwords", res.Token, `{"name":"weechat"}`, 201), &minted); err != nil {
		t.Fatal(err)
	}
	if minted.Name != "weechat" || minted.DID != res.DID || len(minted.Password) != 32 {
		t.Fatalf("minted %+v", minted)
	}
	call("POST", "/api/v1/me/passwords", res.Token, `{"name":"weechat"}`, 409)
	call("POST", "/api/v1/me/passwords", res.Token, `{"name":"no spaces"}`, 400)
	call("POST", "/api/v1/me/passwords", res.Token, `{"nom":"x"}`, 400)
	call("POST", "/api/v1/me/passwords", "", `{"name":"x"}`, 401)
	if list := string(call("GET", "/api/v1/me/passwords", res.Token, "", 200)); !strings.Contains(list, `"name":"weechat"`) || strings.Contains(list, minted.Password) {
		t.Fatalf("list %s", list)
	}

	c := dial(t, n)
	lines := scramLogin(t, c, "dora", minted.Password)
	pwToken := bearerOf(lines)
	if loggedInAs(lines) != res.DID || !strings.HasPrefix(pwToken, "pw-") {
		t.Fatalf("login with the minted password: %v", lines)
	}
	// The bearer of a password login lists but may not mint.
	call("GET", "/api/v1/me/passwords", pwToken, "", 200)
	call("POST", "/api/v1/me/passwords", pwToken, `{"name":"more"}`, 403)

	call("DELETE", "/api/v1/me/passwords/weechat", res.Token, "", 204)
	call("DELETE", "/api/v1/me/passwords/weechat", res.Token, "", 404)
	if list := string(call("GET", "/api/v1/me/passwords", res.Token, "", 200)); strings.TrimSpace(list) != `{"passwords":[]}` {
		t.Fatalf("after revocation: %s", list)
	}
	c = dial(t, n)
	if lines := plainLogin(t, c, "", res.DID, minted.Password); loggedInAs(lines) != "" {
		t.Fatalf("revoked password logs in: %v", lines)
	}
}

// TestHostedAccountDocumentOnEveryNode registers an account on one node of a cluster and reads
// its DID document on each.
func TestHostedAccountDocumentOnEveryNode(t *testing.T) {
	nodes := startNamedCluster(t, "test", func(c *Config) { c.AccountRegistration.Enabled = true })
	c, _ := guest(t, nodes[1], "Quill")
	if m := registerReply(t, c, "REGISTER * * quillpassphrase"); m.Command != "REGISTER" {
		t.Fatalf("REGISTER: %q", m.String())
	}
	for i, n := range nodes {
		var doc struct{ ID string }
		eventually(t, "node "+string(rune('a'+i))+" serves /u/quill/did.json", func() bool {
			resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/u/quill/did.json", "", nil)
			return resp.StatusCode == 200 && json.Unmarshal(body, &doc) == nil
		})
		if doc.ID != "did:web:palaver.test:u:quill" {
			t.Fatalf("node %d: id %q", i, doc.ID)
		}
	}
}
