package node

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/palaver-chat/palaver/node/stream"
)

// A surface whose subscribers are stuck (DropAndResync) stalls neither Raft's apply loop nor the
// IRC edge: state changes are applied and rendered and messages delivered meanwhile; once it
// recovers it catches up. (Overflow into a resync is shown by node/stream's tests.)
func TestStuckSurfaceStallsNothing(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	stuck := make(chan struct{})
	var release sync.Once
	t.Cleanup(func() { release.Do(func() { close(stuck) }) }) // before the node closes its streams
	var resyncs, entries, gaps, items atomic.Int64
	if err := n.streams.Applied.Subscribe("stuck", stream.DropAndResync, func(e stream.Entry) {
		<-stuck
		if e.Resync {
			resyncs.Add(1)
		} else {
			entries.Add(1)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := n.streams.Stored.Subscribe("stuck", stream.DropAndResync, func(it stream.Item) {
		<-stuck
		if it.Gap {
			gaps.Add(1)
		} else {
			items.Add(1)
		}
	}); err != nil {
		t.Fatal(err)
	}
	alice, _ := guest(t, n, "alice")
	bob, _ := guest(t, n, "bob")
	joinChannels(t, alice, "#flow")
	joinChannels(t, bob, "#flow")
	for i := range 200 {
		sendLines(t, alice, "TOPIC #flow :topic "+string(rune('a'+i%26)))
		sendLines(t, alice, "PRIVMSG #flow :message")
	}
	syncClient(t, alice)
	expectFrom(t, bob, "alice", "PRIVMSG", "#flow")
	sendLines(t, alice, "TOPIC #flow :last")
	expect(t, bob, "TOPIC", "#flow", "last") // applied and rendered while the subscriber is stuck
	release.Do(func() { close(stuck) })
	eventually(t, "the stuck subscriber to catch up", func() bool {
		return entries.Load()+resyncs.Load() > 0 && items.Load()+gaps.Load() > 0
	})
}
