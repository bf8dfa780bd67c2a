package irc_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

func TestIRCSecondSessionOfAnAccount(t *testing.T) {
	n := startNode(t, t.TempDir(), func(c *Config) { c.AccountRegistration.Enabled = true })
	const did = "did:web:palaver.test:u:alys"

	first, _ := guest(t, n, "alys", "draft/account-registration", "draft/read-marker")
	if m := registerReply(t, first, "REGISTER * * alyspassphrase"); m.Param(0) != "SUCCESS" {
		t.Fatalf("REGISTER: %q", m.String())
	}
	joinChannels(t, first, "#test")

	// A second connection of the same account asking for the nick the first holds is registered
	// (001) under a nick derived from it, told so in a NOTICE, rather than left with a 433.
	second := dial(t, n)
	sendLines(t, second, "CAP LS 302")
	expectCapLS(t, second)
	sendLines(t, second, "CAP REQ :sasl draft/read-marker")
	expect(t, second, "CAP", "ACK")
	if lines := plainLogin(t, second, "", "alys", "alyspassphrase"); loggedInAs(lines) != did {
		t.Fatalf("PLAIN: %v", lines)
	}
	sendLines(t, second, "NICK alys", "USER alys 0 * :alys", "CAP END")
	got := readUntil(t, second, "the welcome", func(m ircmsg.Message) bool { return m.Command == "001" || m.Command == "433" })
	welcome := got[len(got)-1]
	if welcome.Command != "001" {
		t.Fatalf("second session of the account: %v", lines(got))
	}
	nick := welcome.Param(0)
	if !strings.HasPrefix(nick, "alys-") {
		t.Fatalf("second session registered as %q", nick)
	}
	notice, ok := findMsg(got, "NOTICE", "*")
	if !ok || !strings.Contains(notice.Param(1), "You are "+nick) {
		t.Fatalf("no NOTICE naming %s: %v", nick, lines(got))
	}

	// The sessions share the account's read markers: one's MARKREAD reaches the other.
	const ts = "2022-11-11T11:11:11.111Z"
	sendLines(t, first, "MARKREAD #test timestamp="+ts)
	expectParams(t, first, "MARKREAD", "#test", "timestamp="+ts)
	expectParams(t, second, "MARKREAD", "#test", "timestamp="+ts)

	// A guest still gets 433 for a nick in use.
	third := dial(t, n)
	sendLines(t, third, "NICK alys")
	expect(t, third, "433", "*", "alys")
}

// nextLine returns the next line the server sends to c.
func nextLine(t *testing.T, c *ircclient.Client) ircmsg.Message {
	t.Helper()
	return readUntil(t, c, "a line", func(ircmsg.Message) bool { return true })[0]
}

// TestIRCPasswordReauthentication follows SASL 3.2 ("Servers SHOULD allow a client,
// authenticated or otherwise, to reauthenticate by sending a new AUTHENTICATE message at any
// time"): a registered connection logging in again with a client password gets 900 and 903
// right after its response, and its next AUTHENTICATE PLAIN is answered with AUTHENTICATE +.
func TestIRCPasswordReauthentication(t *testing.T) {
	n := startNode(t, t.TempDir(), func(c *Config) { c.AccountRegistration.Enabled = true })
	for _, account := range []string{"foo", "jilles"} {
		c, _ := guest(t, n, account, "draft/account-registration")
		if m := registerReply(t, c, "REGISTER * * "+account+"passphrase"); m.Param(0) != "SUCCESS" {
			t.Fatalf("REGISTER %s: %q", account, m.String())
		}
		quit(t, n, c, account)
	}

	c := dial(t, n)
	sendLines(t, c, "CAP LS 302")
	expectCapLS(t, c)
	sendLines(t, c, "CAP REQ :sasl")
	expect(t, c, "CAP", "ACK")
	first := plainLogin(t, c, "", "foo", "foopassphrase")
	if loggedInAs(first) != "did:web:palaver.test:u:foo" || !strings.HasPrefix(bearerOf(first), "pw-") {
		t.Fatalf("first login: %v", lines(first))
	}
	finishRegistration(t, c, "user") // the nick becomes foo's
	syncClient(t, c)

	plain := func(user, password string) []ircmsg.Message {
		t.Helper()
		sendLines(t, c, "AUTHENTICATE PLAIN")
		if m := nextLine(t, c); m.Command != "AUTHENTICATE" || m.Param(0) != "+" {
			t.Fatalf("AUTHENTICATE PLAIN answered with %q", m.String())
		}
		sendLines(t, c, "AUTHENTICATE "+base64.StdEncoding.EncodeToString([]byte("\x00"+user+"\x00"+password)))
		got := []ircmsg.Message{nextLine(t, c), nextLine(t, c)}
		if got[0].Command != "900" || got[1].Command != "903" {
			t.Fatalf("login as %s answered with %v", user, lines(got))
		}
		return append(got, drain(t, c)...)
	}
	// Re-authenticating as jilles: 900 and 903 first; the nick, foo's, is left after them.
	after := plain("jilles", "jillespassphrase")
	if after[0].Param(2) != "did:web:palaver.test:u:jilles" {
		t.Fatalf("900 %q", after[0].String())
	}
	if m, ok := findMsg(after, "NICK"); !ok || !strings.HasPrefix(m.Param(0), "user-") {
		t.Fatalf("no rename off foo's nick after 903: %v", lines(after))
	}
	if bearerOf(after) != "" {
		t.Fatalf("a bearer NOTICE on re-authentication: %v", lines(after))
	}
	// And once more, straight away: nothing stands between AUTHENTICATE PLAIN and its "+".
	plain("foo", "foopassphrase")
}
