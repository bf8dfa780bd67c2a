package irc_test

import (
	"encoding/base64"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// sdkCaps are the capabilities freeq's JavaScript SDK requests, in its order.
var sdkCaps = []string{"message-tags", "server-time", "batch", "multi-prefix", "echo-message",
	"account-notify", "account-tag", "extended-join", "away-notify", "draft/chathistory",
	"draft/multiline", "draft/read-marker", "freeq.at/msgsig", "freeq.at/act"}

// sdkLogin negotiates as freeq's JavaScript SDK does with did:key credentials: CAP LS 302, NICK
// and USER at once; one CAP REQ per LS line with the wanted capabilities that line names (a
// substring match) and sasl, or CAP END when it names none; on every ACK, AUTHENTICATE when sasl
// has been acknowledged, else CAP END; on NAK, CAP END; CAP END after 903. It returns the lines
// read up to 001 and the capabilities acknowledged.
func sdkLogin(t *testing.T, c *ircclient.Client, s ircclient.Signer, nick string) (read []string, acked []string) {
	t.Helper()
	multiline := regexp.MustCompile(`draft/multiline(?:=([^\s]+))?`)
	sendLines(t, c, "CAP LS 302", "NICK "+nick, "USER "+nick+" 0 * :freeq sdk")
	for {
		m, err := c.ReadMessage(testCtx(t))
		if err != nil {
			t.Fatalf("after %q: %v", read, err)
		}
		read = append(read, m.String())
		switch {
		case m.Command == "CAP" && m.Param(1) == "LS":
			available := strings.Join(m.Params[2:], " ")
			var wanted []string
			for _, c := range sdkCaps {
				if c == "draft/multiline" && multiline.MatchString(available) || strings.Contains(available, c) {
					wanted = append(wanted, c)
				}
			}
			if strings.Contains(available, "sasl") {
				wanted = append(wanted, "sasl")
			}
			if len(wanted) > 0 {
				sendLines(t, c, "CAP REQ :"+strings.Join(wanted, " "))
			} else {
				sendLines(t, c, "CAP END")
			}
		case m.Command == "CAP" && m.Param(1) == "ACK":
			acked = append(acked, strings.Fields(strings.Join(m.Params[2:], " "))...)
			if slices.Contains(acked, "sasl") {
				sendLines(t, c, "AUTHENTICATE ATPROTO-CHALLENGE")
			} else {
				sendLines(t, c, "CAP END")
			}
		case m.Command == "CAP" && m.Param(1) == "NAK":
			sendLines(t, c, "CAP END")
		case m.Command == "AUTHENTICATE" && m.Param(0) != "+":
			ch, err := base64.RawURLEncoding.DecodeString(m.Param(0))
			if err != nil {
				t.Fatalf("challenge %q: %v", m.Param(0), err)
			}
			sendLines(t, c, "AUTHENTICATE "+saslResponse(t, s.DID(), sign(t, s, ch)))
		case m.Command == "903":
			sendLines(t, c, "CAP END")
		case m.Command == "904":
			t.Fatalf("SASL failed: %q", read)
		case m.Command == "001":
			return read, acked
		}
	}
}

// TestIRCFreeqSDKLoginEveryNode: a client negotiating exactly as freeq's SDK does logs in as its
// DID on every node of a cluster, with the capabilities it asks for acknowledged, before 001.
func TestIRCFreeqSDKLoginEveryNode(t *testing.T) {
	nodes := startCluster(t)
	for i, n := range nodes {
		s := newEd25519(t)
		c := dial(t, n)
		nick := "sdkbot" + string(rune('a'+i))
		read, acked := sdkLogin(t, c, s, nick)
		welcome := read[len(read)-1]
		if !strings.Contains(welcome, "(authenticated as "+s.DID()+")") {
			t.Errorf("node %d: 001 %q is not as %s; read %q", i, welcome, s.DID(), read)
		}
		for _, want := range append(slices.Clone(sdkCaps), "sasl") {
			if !slices.Contains(acked, want) {
				t.Errorf("node %d: %q not acknowledged: %q", i, want, acked)
			}
		}
		sendLines(t, c, "WHOIS "+nick)
		if m := expect(t, c, "330"); m.Param(2) != s.DID() {
			t.Errorf("node %d: WHOIS 330 %q, want %s", i, m.String(), s.DID())
		}
	}
}
