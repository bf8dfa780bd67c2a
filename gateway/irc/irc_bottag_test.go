package irc_test

import (
	"fmt"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// botTag reports whether m carries the bot tag, and fails when it has a value (the bot-mode
// specification's tag has none).
func botTag(t *testing.T, m ircmsg.Message) bool {
	t.Helper()
	v, ok := m.Tags["bot"]
	if ok && v != "" {
		t.Fatalf("bot tag with a value: %s", m.String())
	}
	return ok
}

// TestIRCBotTag: messages from a session in bot mode (+B) carry the bot tag, to message-tags
// clients only, in channels and in private; a session's messages before +B and after -B do not.
func TestIRCBotTag(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	bot, _ := guest(t, n, "tagbot", "message-tags", "echo-message")
	tagged, _ := guest(t, n, "tagreader", "message-tags")
	plain, _ := guest(t, n, "plainreader")
	joinChannels(t, bot, "#bots")
	joinChannels(t, tagged, "#bots")
	joinChannels(t, plain, "#bots")

	sendLines(t, bot, "PRIVMSG #bots :before")
	if botTag(t, expectFrom(t, tagged, "tagbot", "PRIVMSG", "before")) {
		t.Fatal("a message from a session not in bot mode carries the bot tag")
	}
	sendLines(t, bot, "MODE tagbot +B")
	expectParams(t, bot, "MODE", "tagbot", "+B")

	sendLines(t, bot, "PRIVMSG #bots :beep")
	if !botTag(t, expectFrom(t, tagged, "tagbot", "PRIVMSG", "beep")) {
		t.Fatal("channel message from a bot without the bot tag")
	}
	if !botTag(t, expectFrom(t, bot, "tagbot", "PRIVMSG", "beep")) {
		t.Fatal("the bot's echo lacks the bot tag")
	}
	if m := expectFrom(t, plain, "tagbot", "PRIVMSG", "beep"); len(m.Tags) != 0 {
		t.Fatalf("a client without message-tags got tags: %s", m.String())
	}
	sendLines(t, bot, "NOTICE tagreader :boop", "TAGMSG #bots")
	if !botTag(t, expectFrom(t, tagged, "tagbot", "NOTICE", "boop")) {
		t.Fatal("private notice from a bot without the bot tag")
	}
	if !botTag(t, expectFrom(t, tagged, "tagbot", "TAGMSG", "#bots")) {
		t.Fatal("TAGMSG from a bot without the bot tag")
	}

	sendLines(t, bot, "MODE tagbot -B")
	expectParams(t, bot, "MODE", "tagbot", "-B")
	sendLines(t, bot, "PRIVMSG #bots :human again")
	if botTag(t, expectFrom(t, tagged, "tagbot", "PRIVMSG", "human again")) {
		t.Fatal("the bot tag outlived -B")
	}
}

// TestIRCBotTagAcrossNodes: a bot's message delivered on another node carries the tag there too.
func TestIRCBotTagAcrossNodes(t *testing.T) {
	nodes := startCluster(t)
	bot, who := login(t, nodes[0], "xtagbot")
	readers := []*ircclient.Client{}
	for i, n := range nodes[1:] {
		r, _ := login(t, n, fmt.Sprintf("xreader%d", i+1), "message-tags")
		readers = append(readers, r)
		joinChannels(t, r, "#xbots")
	}
	joinChannels(t, bot, "#xbots")
	sendLines(t, bot, "MODE xtagbot +B")
	expectParams(t, bot, "MODE", "xtagbot", "+B")
	for _, r := range readers {
		expectFrom(t, r, "xtagbot", "JOIN", "#xbots")
	}
	// A node tags a message another node stored by its own view of the sender's +B, which it has
	// once the mode's Raft entry is applied there; the messages wait for that.
	for _, n := range nodes[1:] {
		eventually(t, "+B applied on every node", func() bool {
			var bot bool
			n.Machine().Read(func(st *fsm.State) { bot = st.NickIsBot("xtagbot", who.DID) })
			return bot
		})
	}
	sendLines(t, bot, "PRIVMSG #xbots :remote beep", "PRIVMSG xreader1 :private beep")
	for _, r := range readers {
		if !botTag(t, expectFrom(t, r, "xtagbot", "PRIVMSG", "remote beep")) {
			t.Fatal("a bot's message delivered on another node lacks the bot tag")
		}
	}
	if !botTag(t, expectFrom(t, readers[0], "xtagbot", "PRIVMSG", "private beep")) {
		t.Fatal("a bot's private message delivered on another node lacks the bot tag")
	}
}
