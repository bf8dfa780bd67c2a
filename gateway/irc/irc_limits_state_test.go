package irc_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// TestFoundedChannelLimit: a DID that founds MaxFoundedPerDID channels gets 405 for one more,
// which creates nothing.
func TestFoundedChannelLimit(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	c, _ := login(t, n, "founder")
	for i := range fsm.MaxFoundedPerDID {
		sendLines(t, c, fmt.Sprintf("JOIN #fd%d", i))
	}
	expectEndOfNames(t, c, fmt.Sprintf("#fd%d", fsm.MaxFoundedPerDID-1))
	sendLines(t, c, "JOIN #onetoomany")
	if m := expect(t, c, "405", "#onetoomany"); m.Param(len(m.Params)-1) == "" {
		t.Fatalf("405 without text")
	}
	n.Machine().Read(func(st *fsm.State) {
		if st.ChannelExists("#onetoomany") {
			t.Fatalf("the refused channel exists")
		}
	})
}

// TestEmptyChannelsExpire: a channel kept after its last member left (it has a topic) is deleted
// by the leader's sweep once it has been empty for the configured time.
func TestEmptyChannelsExpire(t *testing.T) {
	n := startNode(t, t.TempDir(), func(c *Config) {
		c.ChannelSweepEvery = 20 * time.Millisecond
		c.UnownedChannelExpiry = 50 * time.Millisecond
		c.FoundedChannelExpiry = -1
	})
	g, _ := guest(t, n, "sweeper")
	owner, _ := login(t, n, "keeper")
	joinChannels(t, g, "#leftover")
	sendLines(t, g, "TOPIC #leftover :still here")
	expect(t, g, "TOPIC", "#leftover")
	joinChannels(t, owner, "#founded")
	sendLines(t, g, "PART #leftover")
	sendLines(t, owner, "PART #founded")
	expect(t, owner, "PART", "#founded")
	eventually(t, "#leftover to expire", func() bool {
		gone := false
		n.Machine().Read(func(st *fsm.State) { gone = !st.ChannelExists("#leftover") })
		return gone
	})
	n.Machine().Read(func(st *fsm.State) {
		if !st.ChannelExists("#founded") {
			t.Fatalf("a founded channel expired although founded channels are kept")
		}
	})
}
