package node

import (
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc"
	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// The IRC seams, registered as a surface's constructor would (before the node serves), over real
// sockets: a registered verb is answered, a message check refuses with a FAIL and nothing
// reaches the channel, and join tags decorate JOINs for message-tags clients only.
func TestSurfaceSeamsOverSockets(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	if err := n.irc.RegisterVerb("SEAMVERB", 1, func(v *irc.VerbContext) {
		if v.DID() == "" {
			v.Fail("SEAMVERB", "ACCOUNT_REQUIRED", "log in first", v.Msg.Param(0))
			return
		}
		v.Reply(ircmsg.Message{Command: "NOTE", Params: []string{"SEAMVERB", "OK", v.Msg.Param(0)}})
	}); err != nil {
		t.Fatal(err)
	}
	if err := n.irc.AddMessageCheck("blocked", func(m irc.OutgoingMessage) *irc.Refusal {
		if _, blocked := m.Tags["+example.org/blocked"]; blocked {
			return &irc.Refusal{Code: "INVALID_ACT", Text: "blocked tags are not accepted in " + m.Channel}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := n.irc.AddJoinTags(func(_, _, did string) map[string]string {
		class := "human"
		if did == "" {
			class = "guest"
		}
		return map[string]string{"+freeq.at/actor-class": class}
	}); err != nil {
		t.Fatal(err)
	}

	alice, _ := login(t, n, "alice", "message-tags")
	bob, _ := guest(t, n, "bob")
	carol, _ := guest(t, n, "carol", "message-tags")
	joinChannels(t, alice, "#seams")
	joinChannels(t, carol, "#seams")
	join := expectFrom(t, alice, "carol", "JOIN", "#seams")
	if join.Tags["+freeq.at/actor-class"] != "guest" {
		t.Errorf("alice saw carol's JOIN with tags %v", join.Tags)
	}
	joinChannels(t, bob, "#seams")
	if join := expectFrom(t, carol, "bob", "JOIN", "#seams"); join.Tags["+freeq.at/actor-class"] != "guest" {
		t.Errorf("carol saw bob's JOIN with tags %v", join.Tags)
	}
	for _, m := range bob.Seen() {
		if m.Command == "JOIN" && m.Tags["+freeq.at/actor-class"] != "" {
			t.Errorf("bob (no message-tags) got a tagged JOIN: %v", m)
		}
	}

	sendLines(t, alice, "SEAMVERB")
	expect(t, alice, "461", "SEAMVERB")
	sendLines(t, alice, "SEAMVERB did:plc:abc")
	expect(t, alice, "NOTE", "SEAMVERB", "OK", "did:plc:abc")
	sendLines(t, bob, "SEAMVERB did:plc:abc")
	expect(t, bob, "FAIL", "SEAMVERB", "ACCOUNT_REQUIRED")

	sendLines(t, carol, "@+example.org/blocked=bid TAGMSG #seams")
	expect(t, carol, "FAIL", "TAGMSG", "INVALID_ACT", "#seams")
	sendLines(t, carol, "PRIVMSG #seams :after the refusal")
	got := expectFrom(t, alice, "carol", "PRIVMSG", "#seams")
	if !strings.Contains(got.Param(1), "after the refusal") {
		t.Fatalf("alice got %v first, want the PRIVMSG after the refused TAGMSG (never relayed)", got)
	}
	if err := n.irc.RegisterVerb("LATE", 0, func(*irc.VerbContext) {}); err == nil {
		t.Error("RegisterVerb after the node served a connection was accepted")
	}
}

// A server message sent on one node reaches the channel's members on every node: a live TAGMSG
// only those with message-tags, a stored NOTICE everyone and the history of every node.
func TestServerMessageReachesEveryNode(t *testing.T) {
	nodes := startCluster(t)
	a, b, c := nodes[0], nodes[1], nodes[2]
	onB, _ := guest(t, b, "onb", "message-tags")
	onC, _ := guest(t, c, "onc")
	joinChannels(t, onB, "#announce")
	joinChannels(t, onC, "#announce")
	if _, err := a.irc.SendServerMessage(testCtx(t), irc.ServerMessage{Channel: "#nochannel", Command: "TAGMSG"}); err == nil {
		t.Fatal("a server message to no channel was sent")
	}
	var live string
	eventually(t, "node a to know the channel and send the TAGMSG", func() bool {
		var err error
		live, err = a.irc.SendServerMessage(testCtx(t), irc.ServerMessage{Channel: "#announce", Command: "TAGMSG",
			Tags: map[string]string{"+freeq.at/av-state": "started"}})
		return err == nil
	})
	stored, err := a.irc.SendServerMessage(testCtx(t), irc.ServerMessage{Channel: "#announce", Command: "NOTICE",
		Text: "the call ended", Store: true, Tags: map[string]string{"+freeq.at/av-state": "ended"}})
	if err != nil {
		t.Fatal(err)
	}
	// The live TAGMSG crosses as an ephemeral item and the stored NOTICE on the message stream:
	// either may reach node b first.
	if n := expect(t, onB, "NOTICE", "#announce", "the call ended"); n.Tags["msgid"] != stored || n.Tags["+freeq.at/sig"] == "" {
		t.Errorf("node b got %v, want the signed stored NOTICE", n)
	}
	tag, ok := findMsg(onB.Seen(), "TAGMSG", "#announce")
	if !ok {
		tag = expect(t, onB, "TAGMSG", "#announce")
	}
	if tag.Tags["msgid"] != live || tag.Tags["+freeq.at/av-state"] != "started" || tag.Source != a.cfg.ServerName {
		t.Errorf("node b got %v", tag)
	}
	expect(t, onC, "NOTICE", "#announce", "the call ended")
	refuteMsg(t, onC.Seen(), "TAGMSG") // no message-tags: the live TAGMSG is not for it
	eventually(t, "the NOTICE in node c's history", func() bool {
		resp, body := httpDo(t, "GET", "http://"+c.HTTPAddr()+"/api/v1/channels/announce/history", "", nil)
		return resp.StatusCode == 200 && strings.Contains(string(body), stored)
	})
}
