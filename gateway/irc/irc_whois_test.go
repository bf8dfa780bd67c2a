package irc_test

import (
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// whois sends WHOIS nick and returns its answer up to 318.
func whois(t *testing.T, c *ircclient.Client, nick string) []ircmsg.Message {
	t.Helper()
	sendLines(t, c, "WHOIS "+nick)
	return readUntil(t, c, "318 "+nick, func(m ircmsg.Message) bool { return m.Command == "318" })
}

// TestIRCWhoisKeyValue: WHOIS of a user with metadata carries 760 RPL_WHOISKEYVALUE
// (<nick> <key> <visibility> :<value>) for the keys chosen for people to read, before 318, only
// to a client that negotiated draft/metadata-2; other keys stay for METADATA LIST.
func TestIRCWhoisKeyValue(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	ann, _ := login(t, n, "whoisann", "draft/metadata-2", "batch")
	modern, _ := guest(t, n, "whoismodern", "draft/metadata-2", "batch")
	older, _ := guest(t, n, "whoisolder")
	for _, line := range []string{"METADATA * SET display-name :Ann Example", "METADATA * SET x-internal :not for whois",
		"METADATA * SET homepage :https://ann.example"} {
		sendLines(t, ann, line)
		expect(t, ann, "761")
	}

	cases := []struct {
		name   string
		who    string
		asker  func() []ircmsg.Message
		want   []string // "key value" of each 760, in order
		absent bool
	}{
		{"with the capability", "whoisann", func() []ircmsg.Message { return whois(t, modern, "whoisann") },
			[]string{"display-name Ann Example", "homepage https://ann.example"}, false},
		{"without the capability", "whoisann", func() []ircmsg.Message { return whois(t, older, "whoisann") }, nil, true},
		{"a user without metadata", "whoisolder", func() []ircmsg.Message { return whois(t, modern, "whoisolder") }, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msgs := tc.asker()
			var got []string
			for i, m := range msgs {
				if m.Command != "760" {
					continue
				}
				if len(m.Params) != 5 || m.Param(1) != tc.who || m.Param(3) != "*" {
					t.Fatalf("760 = %q", m.String())
				}
				if i == len(msgs)-1 {
					t.Fatalf("760 after 318: %v", lines(msgs))
				}
				got = append(got, m.Param(2)+" "+m.Param(4))
			}
			if tc.absent && len(got) > 0 || !tc.absent && strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("760 lines %q, want %q (%v)", got, tc.want, lines(msgs))
			}
		})
	}
}

// TestIRCWhoisKeyValueAcrossNodes: the metadata follows the user's DID to every node, and so
// does its WHOIS.
func TestIRCWhoisKeyValueAcrossNodes(t *testing.T) {
	nodes := startCluster(t)
	ann, _ := login(t, nodes[0], "xwhoisann")
	sendLines(t, ann, "METADATA * SET pronouns :she/her")
	expect(t, ann, "761", "pronouns")
	far, _ := guest(t, nodes[2], "xwhoisfar", "draft/metadata-2")
	eventually(t, "760 on another node", func() bool {
		_, ok := findMsg(whois(t, far, "xwhoisann"), "760", "xwhoisann", "pronouns", "*", "she/her")
		return ok
	})
}
