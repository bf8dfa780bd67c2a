package exchange

import (
	"context"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/stream"
)

// deleteOn deletes root on n (a delete made there, filed in n's deletes log) and publishes it as
// the chat service does.
func (n *testNode) deleteOn(t *testing.T, root string) {
	t.Helper()
	by := eventstore.Deleter{Sender: "d!u@h", Tags: map[string]string{"+draft/delete": root}}
	at := time.Now()
	if err := n.store.DeleteAt(context.Background(), root, at, Name(n.did), by); err != nil {
		t.Fatal(err)
	}
	n.stored.PublishDeletion(stream.Local, eventstore.Deletion{RootMsgID: root, At: at, Origin: Name(n.did), Venue: "#x", Deleter: by})
}

// deletedOn reports whether root is stored on n and deleted there.
func (n *testNode) deletedOn(root string) bool {
	m, err := n.store.Get(context.Background(), root)
	return err == nil && !m.DeletedAt.IsZero()
}

func cursorOf(t *testing.T, n *testNode, origin string, l Log) int64 {
	t.Helper()
	c, err := ReadCursor(context.Background(), n.store, inCursor(origin, l))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestStreamCarriesDeletesAndReactions: with no pull at all, a delete and a reaction made on a
// reach b over a's stream, and b's cursors over a's deletes and reactions logs move.
func TestStreamCarriesDeletesAndReactions(t *testing.T) {
	c := newCluster(t, "a", "b")
	a, b := c.nodes["did:web:a"], c.nodes["did:web:b"]
	root := a.say(t, "react to me, then delete me")
	other := a.say(t, "stays")
	waitFor(t, "the messages on b", func() bool { return b.count(other) == 1 })
	a.react(t, other, "👍", false)
	a.deleteOn(t, root)
	waitFor(t, "the reaction on b", func() bool { return tally(t, b, other, "👍") == 1 })
	waitFor(t, "the delete on b", func() bool { return b.deletedOn(root) })
	waitFor(t, "b's cursors over a's logs", func() bool {
		return cursorOf(t, b, "a", LogDeletes) == 1 && cursorOf(t, b, "a", LogReactions) == 1
	})
	if n := b.x.pullRounds.Load(); n != 0 {
		t.Fatalf("b pulled %d times", n)
	}
	if b.deletedOn(other) {
		t.Fatal("the delete applied to another message")
	}
}

// TestWaitingDeleteDoesNotSpin: a delete whose message has not reached the receiver waits there
// (its cursor stays before it) without the origin sending it again and again, and is applied once
// the message has arrived from its own origin.
func TestWaitingDeleteDoesNotSpin(t *testing.T) {
	c := newCluster(t, "a", "b", "c")
	a, b, cc := c.nodes["did:web:a"], c.nodes["did:web:b"], c.nodes["did:web:c"]
	ctx := context.Background()
	// A message a originated: a and b have it, c does not (a has not told its streams).
	m0 := &eventstore.Message{MsgID: ulid.Make().String(), Venue: "#x", Command: "PRIVMSG", Sender: "a!u@h",
		SenderNick: "a", Text: "to be deleted", Time: time.Now(), Origin: "a"}
	if err := a.store.Append(ctx, m0); err != nil {
		t.Fatal(err)
	}
	copyOnB := *m0
	copyOnB.Seq = 0
	if err := b.store.Append(ctx, &copyOnB); err != nil {
		t.Fatal(err)
	}
	b.deleteOn(t, m0.MsgID)
	waitFor(t, "the delete on a", func() bool { return a.deletedOn(m0.MsgID) })
	// b's stream to c carried it too; c waits for the message. A message from b on the same
	// stream shows the stream went on.
	started := time.Now()
	framesBefore := b.x.framesSent.Load()
	probe := b.say(t, "still streaming")
	waitFor(t, "b's next message on c", func() bool { return cc.count(probe) == 1 })
	if got := cursorOf(t, cc, "b", LogDeletes); got != 0 {
		t.Fatalf("c's deletes cursor for b moved to %d before the message arrived", got)
	}
	// One frame to each peer for the probe, plus heartbeats (every streamHeartbeat per peer).
	bound := 2 + 2*(int64(time.Since(started)/streamHeartbeat)+1)
	if n := b.x.framesSent.Load() - framesBefore; n > bound {
		t.Fatalf("b sent %d frames for one message while a delete waited (at most %d)", n, bound)
	}
	// The message arrives on c from a, its origin; b's delete is applied at the latest with b's
	// next heartbeat.
	a.x.Publish(*m0)
	waitFor(t, "the message on c", func() bool { return cc.count(m0.MsgID) == 1 })
	waitFor(t, "the waiting delete on c", func() bool { return cc.deletedOn(m0.MsgID) })
	waitFor(t, "c's deletes cursor for b", func() bool { return cursorOf(t, cc, "b", LogDeletes) == 1 })
}
