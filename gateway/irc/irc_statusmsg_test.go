package irc_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// nextPrivmsg waits for the next PRIVMSG a client gets and returns its target and text.
func nextPrivmsg(t *testing.T, c *ircclient.Client) (string, string) {
	t.Helper()
	msgs := readUntil(t, c, "PRIVMSG", func(m ircmsg.Message) bool { return m.Command == "PRIVMSG" })
	m := msgs[len(msgs)-1]
	return m.Param(0), m.Param(1)
}

// channelTexts is the texts of a channel's REST history on a node.
func channelTexts(t *testing.T, n *Node, channel string) []string {
	t.Helper()
	resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/api/v1/channels/"+strings.TrimPrefix(channel, "#")+"/history?limit=200", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("history of %s: %d %s", channel, resp.StatusCode, body)
	}
	var msgs []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(body, &msgs); err != nil {
		t.Fatalf("history of %s: %v", channel, err)
	}
	var out []string
	for _, m := range msgs {
		out = append(out, m.Text)
	}
	return out
}

// TestIRCStatusMsg: PRIVMSG @#chan reaches only operators, +#chan voiced members and above; a
// status message is live only (not in history). Each member's next PRIVMSG after a status message
// it must not get is a plain one sent after it, so a wrong delivery shows up as the wrong line.
func TestIRCStatusMsg(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	op, _ := loginAs(t, n, newEd25519(t), "stop")
	chanOp(t, op, "#st")
	voiced, _ := guest(t, n, "stvoice")
	plain, _ := guest(t, n, "stplain")
	joinChannels(t, voiced, "#st")
	joinChannels(t, plain, "#st")
	sendLines(t, op, "MODE #st +v stvoice")
	expectFrom(t, plain, "stop", "MODE", "#st", "+v", "stvoice")

	sendLines(t, plain, "PRIVMSG @#st :for ops")
	if target, text := nextPrivmsg(t, op); target != "@#st" || text != "for ops" {
		t.Fatalf("op got %s %q", target, text)
	}
	sendLines(t, plain, "PRIVMSG +#st :for voices")
	for name, c := range map[string]*ircclient.Client{"op": op, "voiced": voiced} {
		if target, text := nextPrivmsg(t, c); target != "+#st" || text != "for voices" {
			t.Fatalf("%s got %s %q", name, target, text)
		}
	}
	sendLines(t, op, "PRIVMSG #st :for all")
	for name, c := range map[string]*ircclient.Client{"voiced": voiced, "plain": plain} {
		if target, text := nextPrivmsg(t, c); target != "#st" || text != "for all" {
			t.Fatalf("%s got %s %q, want the plain message", name, target, text)
		}
	}
	if got := channelTexts(t, n, "#st"); strings.Join(got, "|") != "for all" {
		t.Fatalf("history %q holds a status message", got)
	}
	sendLines(t, plain, "VERSION")
	expect(t, plain, "005", "STATUSMSG=@%+")
}

// TestIRCStatusMsgAcrossNodes: a status message sent on one node reaches the operators on the
// others, and nobody below the prefix.
func TestIRCStatusMsgAcrossNodes(t *testing.T) {
	nodes := startCluster(t)
	op, _ := loginAs(t, nodes[0], newEd25519(t), "xstop")
	chanOp(t, op, "#xst")
	plainB, _ := guest(t, nodes[1], "xstplainb")
	sender, _ := guest(t, nodes[2], "xstsender")
	joinChannels(t, plainB, "#xst")
	joinChannels(t, sender, "#xst")
	expectFrom(t, op, "xstsender", "JOIN", "#xst") // the sender's join reached the operator's node

	sendLines(t, sender, "PRIVMSG @#xst :ops elsewhere")
	if target, text := nextPrivmsg(t, op); target != "@#xst" || text != "ops elsewhere" {
		t.Fatalf("op on another node got %s %q", target, text)
	}
	sendLines(t, sender, "PRIVMSG #xst :everyone")
	if target, text := nextPrivmsg(t, plainB); target != "#xst" || text != "everyone" {
		t.Fatalf("a plain member on another node got %s %q", target, text)
	}
}
