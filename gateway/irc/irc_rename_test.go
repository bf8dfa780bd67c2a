package irc_test

import (
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// TestIRCChannelRename follows draft/channel-rename: an operator renames a channel; members with
// the capability get RENAME, the others PART and JOIN with the topic and names; the channel keeps
// its topic, members and pins under the new name; errors are 482 and FAIL RENAME codes.
func TestIRCChannelRename(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	op, _ := login(t, n, "renop", "draft/channel-rename")
	capped, _ := guest(t, n, "rencap", "draft/channel-rename")
	plain, _ := guest(t, n, "renplain")
	chanOp(t, op, "#before", "+t")
	sendLines(t, op, "TOPIC #before :kept topic")
	expectFrom(t, op, "renop", "TOPIC", "#before")
	joinChannels(t, capped, "#before")
	joinChannels(t, plain, "#before")
	joinChannels(t, plain, "#taken")

	sendLines(t, capped, "RENAME #before #after")
	expect(t, capped, "482", "#before")

	sendLines(t, op, "RENAME #before #after :typo fix")
	expectParams(t, op, "RENAME", "#before", "#after", "typo fix")
	if m := expectFrom(t, capped, "renop", "RENAME"); m.Param(0) != "#before" || m.Param(1) != "#after" || m.Param(2) != "typo fix" {
		t.Fatalf("RENAME %v", m.Params)
	}
	msgs := readUntil(t, plain, "366 #after", func(m ircmsg.Message) bool { return m.Command == "366" && m.Param(1) == "#after" })
	want := []string{"PART", "JOIN", "332", "333", "353", "366"}
	var got []string
	for _, m := range msgs {
		switch m.Command {
		case "PART", "JOIN", "332", "333", "353", "366":
			got = append(got, m.Command)
		}
	}
	if len(got) < len(want) || got[len(got)-6] != "PART" {
		t.Fatalf("fallback %v, want %v", lines(msgs), want)
	}
	for i, w := range want {
		if got[len(got)-6+i] != w {
			t.Fatalf("fallback %v, want %v", got, want)
		}
	}
	part, _ := findMsg(msgs, "PART", "#before", "typo fix")
	if !isFrom(part, "renplain") {
		t.Fatalf("fallback PART %s, want the client's own", part.String())
	}
	if topic, _ := findMsg(msgs, "332", "#after"); topic.Param(2) != "kept topic" {
		t.Fatalf("topic after the rename %v", topic.Params)
	}

	sendLines(t, plain, "PRIVMSG #after :hello new name")
	expectFrom(t, capped, "renplain", "PRIVMSG", "#after", "hello new name")
	sendLines(t, plain, "PRIVMSG #before :old name")
	expect(t, plain, "403", "#before")
	sendLines(t, op, "MODE #after")
	expect(t, op, "324", "#after", "t")

	sendLines(t, op, "RENAME #after #taken")
	expect(t, op, "FAIL", "RENAME", "CHANNEL_NAME_IN_USE", "#after", "#taken")
	sendLines(t, op, "RENAME #after &after")
	expect(t, op, "FAIL", "RENAME", "CANNOT_RENAME", "#after", "&after")
	sendLines(t, op, "RENAME #after after")
	expect(t, op, "FAIL", "RENAME", "CANNOT_RENAME", "#after", "after")
	sendLines(t, op, "RENAME #nothing #else")
	expect(t, op, "403", "#nothing")
}

// TestIRCChannelRenameAcrossNodes: a rename on one node moves the channel for members on the
// others, who keep talking in it under its new name.
func TestIRCChannelRenameAcrossNodes(t *testing.T) {
	nodes := startCluster(t)
	op, _ := login(t, nodes[0], "xrenop", "draft/channel-rename")
	far, _ := guest(t, nodes[2], "xrenfar")
	joinChannels(t, op, "#xbefore")
	joinChannels(t, far, "#xbefore")
	expectFrom(t, op, "xrenfar", "JOIN", "#xbefore")
	sendLines(t, op, "RENAME #xbefore #xafter :moving")
	expectParams(t, op, "RENAME", "#xbefore", "#xafter", "moving")
	expectFrom(t, far, "xrenfar", "PART", "#xbefore", "moving")
	expectFrom(t, far, "xrenfar", "JOIN", "#xafter")
	expect(t, far, "366", "#xafter")
	sendLines(t, far, "PRIVMSG #xafter :from afar")
	expectFrom(t, op, "xrenfar", "PRIVMSG", "#xafter", "from afar")
}
