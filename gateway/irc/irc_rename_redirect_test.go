package irc_test

import (
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// TestIRCChannelRenameRedirection follows draft/channel-rename's channel redirection: after a
// rename, a JOIN of the former name is answered FAIL JOIN CHANNEL_RENAMED <old> <new> to a client
// with the capability (which is not joined), and 470 then the join of the new name to one
// without it (the key it gave applies there). A chain of renames leads to the newest name; a
// channel that takes the former name again ends the redirection.
func TestIRCChannelRenameRedirection(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	op, _ := login(t, n, "redirop", "draft/channel-rename")
	capped, _ := guest(t, n, "redircap", "draft/channel-rename")
	plain, _ := guest(t, n, "redirplain")
	locked, _ := guest(t, n, "redirlocked")
	chanOp(t, op, "#redir-old")
	sendLines(t, op, "RENAME #redir-old #redir-new :moved")
	expectParams(t, op, "RENAME", "#redir-old", "#redir-new", "moved")

	t.Run("with the capability", func(t *testing.T) {
		sendLines(t, capped, "JOIN #Redir-Old")
		expectParams(t, capped, "FAIL", "JOIN", "CHANNEL_RENAMED", "#Redir-Old", "#redir-new", "The channel has been renamed")
		refuteMsg(t, drain(t, capped), "JOIN")
		sendLines(t, capped, "JOIN #redir-new")
		expect(t, capped, "366", "#redir-new")
	})
	t.Run("without the capability", func(t *testing.T) {
		drain(t, plain)
		sendLines(t, plain, "JOIN #redir-old")
		msgs := readUntil(t, plain, "366", func(m ircmsg.Message) bool { return m.Command == "366" })
		if got := commandsOf(msgs); len(got) < 3 || got[0] != "470" || got[1] != "JOIN" {
			t.Fatalf("redirection %v", lines(msgs))
		}
		if m := msgs[0]; len(m.Params) != 4 || m.Param(1) != "#redir-old" || m.Param(2) != "#redir-new" {
			t.Fatalf("470 = %q", m.String())
		}
		if m := msgs[1]; !isFrom(m, "redirplain") || m.Param(0) != "#redir-new" {
			t.Fatalf("JOIN = %q", m.String())
		}
	})
	t.Run("the key applies to the new name", func(t *testing.T) {
		sendLines(t, op, "MODE #redir-new +k sesame")
		expect(t, op, "MODE", "#redir-new", "+k")
		sendLines(t, locked, "JOIN #redir-old")
		expect(t, locked, "470", "#redir-old", "#redir-new")
		expect(t, locked, "475", "#redir-new")
		sendLines(t, locked, "JOIN #redir-old sesame")
		expect(t, locked, "470", "#redir-old", "#redir-new")
		expect(t, locked, "366", "#redir-new")
	})
	t.Run("a chain leads to the newest name", func(t *testing.T) {
		sendLines(t, op, "RENAME #redir-new #redir-newest")
		expectParams(t, op, "RENAME", "#redir-new", "#redir-newest", "")
		for _, old := range []string{"#redir-old", "#redir-new"} {
			sendLines(t, capped, "PART #redir-newest", "JOIN "+old)
			expectParams(t, capped, "FAIL", "JOIN", "CHANNEL_RENAMED", old, "#redir-newest", "The channel has been renamed")
		}
	})
	t.Run("the name taken again", func(t *testing.T) {
		sendLines(t, op, "RENAME #redir-newest #redir-old")
		expectParams(t, op, "RENAME", "#redir-newest", "#redir-old", "")
		sendLines(t, capped, "JOIN #redir-old sesame") // the channel's key, kept through the renames
		expect(t, capped, "366", "#redir-old")
		sendLines(t, capped, "PART #redir-old", "JOIN #redir-new") // a member would get a new #redir-new
		expectParams(t, capped, "FAIL", "JOIN", "CHANNEL_RENAMED", "#redir-new", "#redir-old", "The channel has been renamed")
	})
	t.Run("a name never renamed", func(t *testing.T) {
		sendLines(t, capped, "JOIN #redir-fresh")
		expect(t, capped, "366", "#redir-fresh")
	})
}

// TestIRCChannelRenameRedirectionAcrossNodes: the former name redirects on every node.
func TestIRCChannelRenameRedirectionAcrossNodes(t *testing.T) {
	nodes := startCluster(t)
	op, _ := login(t, nodes[0], "xredirop", "draft/channel-rename")
	joinChannels(t, op, "#xredir-old") // first: its operator
	var members []*ircclient.Client
	for i, n := range nodes[1:] {
		m, _ := guest(t, n, "xredirmember"+string(rune('a'+i)), "draft/channel-rename")
		joinChannels(t, m, "#xredir-old")
		members = append(members, m)
	}
	sendLines(t, op, "RENAME #xredir-old #xredir-new")
	for _, m := range members { // the rename is applied on that member's node
		expectFrom(t, m, "xredirop", "RENAME", "#xredir-old", "#xredir-new")
	}
	for i, n := range nodes {
		c, _ := guest(t, n, "xredirjoin"+string(rune('a'+i)))
		sendLines(t, c, "JOIN #xredir-old")
		expect(t, c, "470", "#xredir-old", "#xredir-new")
		expect(t, c, "366", "#xredir-new")
	}
}

// TestIRCChannelRenameMemberJoinsFormerName: redirection is for clients that were not present at
// the rename; a member of the renamed channel, with the capability or without it, that JOINs the
// former name gets that name: a new channel it operates, and the redirection ends for everyone.
func TestIRCChannelRenameMemberJoinsFormerName(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	op, _ := guest(t, n, "memberop", "draft/channel-rename")
	plain, _ := guest(t, n, "memberplain")
	later, _ := guest(t, n, "memberlater")
	chanOp(t, op, "#member-old")
	joinChannels(t, plain, "#member-old")
	sendLines(t, op, "RENAME #member-old #member-new :no reason")
	expectParams(t, op, "RENAME", "#member-old", "#member-new", "no reason")
	expectEndOfNames(t, plain, "#member-new") // the fallback's PART, JOIN and names

	sendLines(t, plain, "JOIN #member-old")
	msgs := readUntil(t, plain, "366 #member-old", func(m ircmsg.Message) bool { return m.Command == "366" })
	if m := msgs[0]; m.Command != "JOIN" || m.Param(0) != "#member-old" || !isFrom(m, "memberplain") {
		t.Fatalf("JOIN of the former name by a member: %v", lines(msgs))
	}
	refuteMsg(t, msgs, "470")
	sendLines(t, plain, "MODE #member-old +k beer")
	expect(t, plain, "MODE", "#member-old", "+k", "beer") // its operator: a new channel

	sendLines(t, op, "RENAME #member-new #member-newer")
	expectParams(t, op, "RENAME", "#member-new", "#member-newer", "")
	sendLines(t, op, "JOIN #member-new")
	expectFrom(t, op, "memberop", "JOIN", "#member-new")
	refuteMsg(t, drain(t, op), "FAIL", "JOIN", "CHANNEL_RENAMED")

	sendLines(t, later, "JOIN #member-old beer") // the name is a channel again: no redirection
	msgs = readUntil(t, later, "366", func(m ircmsg.Message) bool { return m.Command == "366" })
	refuteMsg(t, msgs, "470")
	if _, ok := findMsg(msgs, "JOIN", "#member-old"); !ok {
		t.Fatalf("JOIN of a retaken name: %v", lines(msgs))
	}
}
