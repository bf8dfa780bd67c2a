package irc_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/nodetest"
)

// A node that joins the cluster after a channel's traffic replays the channel's events (JOIN,
// TOPIC, MODE, PART ...) to a draft/event-playback client line for line as a node that was there:
// it applied those entries before its edge began filing their lines, and fills them in from its
// peers.
func TestLateNodeReplaysTheSameChannelEvents(t *testing.T) {
	dirA := t.TempDir()
	clustered := func(name string, join []string, secret string) func(*Config) {
		return func(c *Config) {
			c.TLSAddr = "127.0.0.1:0"
			c.NodeName = name + ".late"
			c.GossipAddr, c.ClusterAddr = "127.0.0.1:0", "127.0.0.1:0"
			c.Join, c.ClusterSecret = join, secret
		}
	}
	a := startNode(t, dirA, clustered("node-a", nil, ""))
	secret := filepath.Join(dirA, "cluster", "secret")
	b := nodetest.Start(t, clustered("node-b", []string{a.GossipAddr()}, secret))

	caps := append(slices.Clone(playbackCaps), "message-tags")
	alice, _ := login(t, a, "lalice", caps...)
	bob, _ := guest(t, b, "lbob", caps...)
	joinChannels(t, alice, "#late")
	alice.Send("TOPIC #late :before the late node")
	expect(t, alice, "TOPIC", "before the late node")
	alice.Send("MODE #late +l 50")
	expect(t, alice, "MODE", "#late", "+l", "50")
	joinChannels(t, bob, "#late")
	alice.Send("PRIVMSG #late :a message between the events")
	expect(t, bob, "PRIVMSG", "a message between the events")
	bob.Send("PART #late :away")
	expect(t, alice, "PART", "#late")
	joinChannels(t, bob, "#late")
	alice.Send("TOPIC #late :still before it")
	expect(t, bob, "TOPIC", "still before it")

	late := nodetest.Start(t, clustered("node-late", []string{a.GossipAddr()}, secret))
	carol, _ := guest(t, late, "lcarol", caps...)
	joinChannels(t, carol, "#late")
	expect(t, alice, "JOIN", "#late") // carol's JOIN is applied on node a too

	const replay = "CHATHISTORY LATEST #late * 100"
	var want, got []string
	eventually(t, "the late node replays what node a does", func() bool {
		want = historyLines(historyBatch(t, alice, replay, "#late"))
		got = historyLines(historyBatch(t, carol, replay, "#late"))
		return slices.Equal(got, want)
	})
	if !slices.ContainsFunc(got, func(l string) bool { return strings.Contains(l, "TOPIC #late before the late node") }) {
		t.Fatalf("the replay lacks the first TOPIC:\n%s", strings.Join(got, "\n"))
	}
}

func historyLines(msgs []ircmsg.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = historyLine(m)
	}
	return out
}
