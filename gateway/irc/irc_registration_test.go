package irc_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"

	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

func TestIRCCapNegotiation(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)

	t.Run("LS 302 lists the SASL mechanism, bare LS does not", func(t *testing.T) {
		cases := []struct {
			ls       string
			wantSASL string
			notSASL  string
		}{
			{"CAP LS 302", "sasl=ATPROTO-CHALLENGE,PLAIN,SCRAM-SHA-256", "sasl"},
			{"CAP LS", "sasl", "sasl=ATPROTO-CHALLENGE,PLAIN,SCRAM-SHA-256"},
		}
		for _, tc := range cases {
			c := dial(t, n)
			sendLines(t, c, tc.ls)
			m, caps := expectCapLS(t, c)
			if m.Param(0) != "*" || m.Param(1) != "LS" {
				t.Fatalf("%s: reply %q, want CAP * LS", tc.ls, m.String())
			}
			if !slices.Contains(caps, tc.wantSASL) || slices.Contains(caps, tc.notSASL) {
				t.Fatalf("%s: caps %q, want %q and not %q", tc.ls, caps, tc.wantSASL, tc.notSASL)
			}
			for _, want := range []string{"message-tags", "server-time", "account-tag", "echo-message", "extended-join",
				"account-notify", "away-notify", "multi-prefix", "batch", "labeled-response", "draft/chathistory"} {
				if !slices.Contains(caps, want) {
					t.Errorf("%s: %s not advertised in %q", tc.ls, want, caps)
				}
			}
		}
	})

	t.Run("REQ is all or nothing and LIST shows the result", func(t *testing.T) {
		c := dial(t, n)
		sendLines(t, c, "CAP LS 302", "CAP REQ :message-tags server-time")
		expectParams(t, c, "CAP", "*", "ACK", "message-tags server-time")
		sendLines(t, c, "CAP REQ :batch no-such-cap")
		expectParams(t, c, "CAP", "*", "NAK", "batch no-such-cap")
		sendLines(t, c, "CAP LIST")
		list := expect(t, c, "CAP", "LIST")
		got := strings.Fields(list.Param(2))
		slices.Sort(got)
		if strings.Join(got, " ") != "cap-notify message-tags server-time" {
			t.Fatalf("CAP LIST = %q after a NAKed request, want cap-notify message-tags server-time", list.Param(2))
		}
		sendLines(t, c, "CAP REQ :-server-time")
		expectParams(t, c, "CAP", "*", "ACK", "-server-time")
		sendLines(t, c, "CAP LIST")
		expectParams(t, c, "CAP", "*", "LIST", "cap-notify message-tags")
	})

	// IRCv3 cap-notify: "The cap-notify capability MUST be implicitly enabled if the client
	// requests CAP LS with a version of 302 or newer ... Further, the cap-notify capability MAY
	// NOT be disabled if the client requests CAP LS with a version of 302 or newer. ... client
	// MAY request the capability with CAP REQ, and capable servers MUST accept and CAP ACK the
	// request without side effects. Clients that do not support CAP LS version 302 MAY request
	// the cap-notify capability explicitly. Such clients MAY disable the capability at any time."
	t.Run("cap-notify: implied by LS 302 and kept; requested and dropped before 302", func(t *testing.T) {
		c := dial(t, n)
		sendLines(t, c, "CAP LS 302", "CAP LIST")
		expectParams(t, c, "CAP", "*", "LIST", "cap-notify")
		sendLines(t, c, "CAP REQ :cap-notify")
		expectParams(t, c, "CAP", "*", "ACK", "cap-notify")
		sendLines(t, c, "CAP REQ :-cap-notify")
		expectParams(t, c, "CAP", "*", "NAK", "-cap-notify")
		sendLines(t, c, "CAP LIST")
		expectParams(t, c, "CAP", "*", "LIST", "cap-notify")

		old := dial(t, n)
		sendLines(t, old, "CAP LS", "CAP LIST")
		expectParams(t, old, "CAP", "*", "LIST", "")
		sendLines(t, old, "CAP REQ :cap-notify")
		expectParams(t, old, "CAP", "*", "ACK", "cap-notify")
		sendLines(t, old, "CAP LIST")
		expectParams(t, old, "CAP", "*", "LIST", "cap-notify")
		sendLines(t, old, "CAP REQ :-cap-notify", "CAP LIST")
		expectParams(t, old, "CAP", "*", "ACK", "-cap-notify")
		expectParams(t, old, "CAP", "*", "LIST", "")
	})

	t.Run("registration waits for CAP END", func(t *testing.T) {
		c := dial(t, n)
		sendLines(t, c, "CAP LS 302", "NICK capwaiter", "USER capwaiter 0 * :Cap Waiter")
		refuteMsg(t, drain(t, c), "001")
		sendLines(t, c, "CAP END")
		w := expect(t, c, "001")
		if w.Param(0) != "capwaiter" || !strings.Contains(w.Param(1), "(guest)") {
			t.Fatalf("001 = %q", w.String())
		}
		expect(t, c, "005", "CHANMODES=beI,k,l,CimnstE", "PREFIX=(ohv)@%+")
		expect(t, c, "422")
		sendLines(t, c, "CAP LIST")
		expectParams(t, c, "CAP", "capwaiter", "LIST", "cap-notify")
	})
}

func TestIRCRegistrationErrors(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)

	t.Run("433 for a nick in use", func(t *testing.T) {
		guest(t, n, "taken")
		c := dial(t, n)
		sendLines(t, c, "NICK taken")
		expectParams(t, c, "433", "*", "taken", "Nickname is already in use")
		sendLines(t, c, "NICK TAKEN")
		expect(t, c, "433", "TAKEN")
		sendLines(t, c, "NICK nottaken", "USER x 0 * :X")
		if w := expect(t, c, "001"); w.Param(0) != "nottaken" {
			t.Fatalf("001 = %q", w.String())
		}
		sendLines(t, c, "NICK taken")
		expect(t, c, "433", "taken")
	})

	t.Run("432 for malformed nicks", func(t *testing.T) {
		bad := []struct{ name, param, bug string }{
			{name: "channel prefix", param: "#chan"},
			{name: "local channel prefix", param: "&chan"},
			{name: "voice prefix", param: "+voice"},
			{name: "halfop prefix", param: "%half"},
			{name: "op prefix", param: "@op"},
			{name: "colon", param: "::colon"}, // echoed as "*": a middle parameter cannot start with ':'
			{name: "did prefix", param: "did:key:z6MkNotANick"},
			{name: "bang", param: "a!b"},
			{name: "at", param: "a@b"},
			{name: "star", param: "a*b"},
			{name: "question mark", param: "a?b"},
			{name: "comma", param: "a,b"},
			{name: "control character", param: "bell\x07nick"},
			{name: "65 bytes", param: strings.Repeat("n", 65)},
		}
		pre := dial(t, n)
		post, _ := guest(t, n, "renamer")
		drain(t, post)
		for _, tc := range bad {
			t.Run(tc.name, func(t *testing.T) {
				want := strings.TrimPrefix(tc.param, ":")
				if strings.HasPrefix(want, ":") {
					want = "*"
				}
				for _, c := range []struct {
					client *ircclient.Client
					nick   string
				}{{pre, "*"}, {post, "renamer"}} {
					sendLines(t, c.client, "NICK "+tc.param)
					got := drain(t, c.client)
					if len(got) != 1 || strings.Join(got[0].Params, "|") != c.nick+"|"+want+"|Erroneous nickname" {
						t.Fatalf("NICK %q: got %q, want 432 %s %s :Erroneous nickname", tc.param, lines(got), c.nick, want)
					}
				}
			})
		}
		// 64 bytes is still a nick.
		long := strings.Repeat("n", 64)
		sendLines(t, post, "NICK "+long)
		expectFrom(t, post, "renamer", "NICK", long)
		sendLines(t, pre, "NICK preok", "USER preok 0 * :x")
		expect(t, pre, "001", "preok")
	})

	t.Run("451 before registration", func(t *testing.T) {
		c := dial(t, n)
		for _, line := range []string{"JOIN #early", "PRIVMSG someone :hi", "WHOIS someone", "MODE #early", "CHATHISTORY LATEST #early * 10"} {
			sendLines(t, c, line)
			expectParams(t, c, "451", "*", "You have not registered")
		}
		// PING works before registration.
		sendLines(t, c, "PING early")
		expectParams(t, c, "PONG", "palaver.test", "early")
	})

	t.Run("421 for an unknown command", func(t *testing.T) {
		c, _ := guest(t, n, "unknowncmd")
		sendLines(t, c, "FROBNICATE a b")
		expectParams(t, c, "421", "unknowncmd", "FROBNICATE", "Unknown command")
	})

	t.Run("461 for missing parameters", func(t *testing.T) {
		c, _ := guest(t, n, "fewparams")
		for _, line := range []string{"JOIN", "PART", "KICK #c", "INVITE someone", "TOPIC", "WHOIS", "OPER name",
			"USERHOST", "ISON", "MODE", "TAGMSG", "PING"} {
			sendLines(t, c, line)
			cmd, _, _ := strings.Cut(line, " ")
			expectParams(t, c, "461", "fewparams", cmd, "Not enough parameters")
		}
		pre := dial(t, n)
		sendLines(t, pre, "USER onlyone")
		expectParams(t, pre, "461", "*", "USER", "Not enough parameters")
	})

	t.Run("462 for a second USER", func(t *testing.T) {
		c, _ := guest(t, n, "twiceuser")
		sendLines(t, c, "USER again 0 * :Again")
		expectParams(t, c, "462", "twiceuser", "You may not reregister")
	})

	t.Run("PING gets a PONG with the token", func(t *testing.T) {
		c, _ := guest(t, n, "pinger")
		sendLines(t, c, "PING :a token with spaces")
		m := expectParams(t, c, "PONG", "palaver.test", "a token with spaces")
		if m.Source != "palaver.test" {
			t.Fatalf("PONG source %q", m.Source)
		}
	})
}

// The keepalive (a server PING after 30 s of silence, a disconnect 60 s later) is not tested here:
// node.Config has no knob to shorten irc.Config.PingAfter/PingTimeout, and the defaults are too long
// for a unit test.

// TestIRCSASLSuccessLines checks the lines of a successful login (freeq-reference §1.4): 900, 903
// and the API-BEARER NOTICE, in that order, before and after NICK.
func TestIRCSASLSuccessLines(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)

	t.Run("after NICK and USER", func(t *testing.T) {
		c, res := login(t, n, "saslnick")
		cloak := strings.TrimPrefix(res.DID, "did:key:")[:8] + ".key.palaver"
		var got []string
		for _, m := range res.Lines {
			switch m.Command {
			case "900", "903", "NOTICE", "MODE":
				got = append(got, m.String())
			}
		}
		want := []string{
			":palaver.test 900 saslnick saslnick!saslnick@" + cloak + " " + res.DID + " :You are now logged in as " + res.DID,
			":palaver.test 903 saslnick :SASL authentication successful",
			":palaver.test NOTICE * :API-BEARER " + res.Token,
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("success lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		w := expectSeen(t, c, "001")
		if w.Param(1) != "Welcome to palaver.test, saslnick (authenticated as "+res.DID+")" {
			t.Fatalf("001 = %q", w.String())
		}
	})

	t.Run("before NICK", func(t *testing.T) {
		c := dial(t, n)
		s := newEd25519(t)
		sendLines(t, c, "CAP LS 302", "CAP REQ :sasl")
		expect(t, c, "CAP", "ACK")
		ch := challenge(t, c)
		sendLines(t, c, "AUTHENTICATE "+saslResponse(t, s.DID(), sign(t, s, ch)))
		m := expect(t, c, "900")
		if m.Param(0) != "*" || !strings.HasPrefix(m.Param(1), "*!") || m.Param(2) != s.DID() {
			t.Fatalf("900 = %q", m.String())
		}
		expectParams(t, c, "903", "*", "SASL authentication successful")
		expect(t, c, "NOTICE", "API-BEARER ")
		sendLines(t, c, "NICK latenick", "USER latenick 0 * :Late", "CAP END")
		w := expect(t, c, "001")
		if w.Param(0) != "latenick" || !strings.Contains(w.Param(1), "(authenticated as "+s.DID()+")") {
			t.Fatalf("001 = %q", w.String())
		}
	})
}

// TestIRCMOTD: without a MOTD file registration ends with 422 and no MOTD lines; with one, 375,
// a 372 per line of the file and 376, at registration and on MOTD; an empty file is no MOTD.
func TestIRCMOTD(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "motd.txt")
	empty := filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(file, []byte("Be kind.\r\nSecond line\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("\n  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, motdFile string
		want           []string // MOTD lines; none: 422
	}{
		{"no file", "", nil},
		{"an empty file", empty, nil},
		{"a file", file, []string{"- Be kind.", "- Second line"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := startNode(t, t.TempDir(), func(c *Config) { c.MOTDFile = tc.motdFile })
			c := dial(t, n)
			sendLines(t, c, "NICK motdreader", "USER motdreader 0 * :MOTD")
			for _, verb := range []string{"registration", "MOTD"} {
				if verb == "MOTD" {
					sendLines(t, c, "MOTD")
				}
				msgs := readUntil(t, c, "the end of the MOTD", func(m ircmsg.Message) bool { return m.Command == "376" || m.Command == "422" })
				var got []string
				for _, m := range msgs {
					switch m.Command {
					case "375", "376", "422":
						got = append(got, m.Command)
					case "372":
						got = append(got, m.Param(1))
					}
				}
				want := []string{"422"}
				if tc.want != nil {
					want = append(append([]string{"375"}, tc.want...), "376")
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s: %q, want %q", verb, got, want)
				}
			}
		})
	}
}
