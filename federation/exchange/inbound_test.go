package exchange

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/federation/eventstore"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/stream"
)

// pipelineNode is a store, a Stored stream whose items a test subscriber records, and the
// pipeline over them, for node "self".
type pipelineNode struct {
	store *eventstore.Store
	st    *stream.Stored
	p     *Pipeline
	mu    sync.Mutex
	items []stream.Item
}

func newPipelineNode(t *testing.T) *pipelineNode {
	t.Helper()
	store, err := eventstore.Open(context.Background(), eventstore.Options{Path: t.TempDir() + "/e.db", NoSync: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	n := &pipelineNode{store: store, st: stream.NewStored(stream.StoredOptions{})}
	t.Cleanup(n.st.Close)
	if err := n.st.Subscribe("test", stream.Backpressure, func(it stream.Item) {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.items = append(n.items, it)
	}, stream.Cluster, stream.Federation); err != nil {
		t.Fatal(err)
	}
	n.p = NewPipeline(&Rules{Store: store, Stored: n.st, NodeName: "self", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return n
}

// published lists what was published since the last call, as "<source> <kind> <id>".
func (n *pipelineNode) published(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.st.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, it := range n.items {
		id := ""
		switch it.Kind {
		case stream.KindMessage:
			id = it.Message.MsgID
		case stream.KindDeletion:
			id = it.Deletion.RootMsgID
		case stream.KindReaction:
			id = it.Reaction.EventID
		}
		out = append(out, it.Source.String()+" "+it.Kind.String()+" "+id)
	}
	n.items = nil
	return out
}

func remoteMessage(origin, text string) *eventstore.Message {
	return &eventstore.Message{MsgID: ulid.Make().String(), Venue: "#x", Command: "PRIVMSG", Sender: "a!u@h",
		SenderNick: "a", SenderDID: "did:plc:alice", Text: text, Time: time.Now(), Origin: origin}
}

func TestPipelineTrustGateAndDedupe(t *testing.T) {
	ctx := context.Background()
	n := newPipelineNode(t)
	node := Source{Peer: Member{DID: "did:web:n2", Trust: TrustCluster}, Kind: stream.Cluster}
	readonly := Source{Peer: Member{DID: "did:web:ro.example", Trust: TrustReadonly}, Kind: stream.Federation}

	m := remoteMessage("n2", "hello")
	res, err := n.p.Receive(ctx, readonly, Remote{Messages: []*eventstore.Message{m},
		Deletions: []eventstore.Deletion{{RootMsgID: m.MsgID, Venue: "#x"}}})
	if err != nil || !slices.Equal(res.Messages, []chat.Outcome{NotAllowed}) || !slices.Equal(res.Deletions, []chat.Outcome{NotAllowed}) {
		t.Fatalf("readonly: %+v, %v", res, err)
	}
	if c, _ := n.store.Count(ctx); c != 0 {
		t.Fatalf("a readonly peer's message was stored (%d rows)", c)
	}

	copyOf := *m
	res, err = n.p.Receive(ctx, node, Remote{Messages: []*eventstore.Message{m}})
	if err != nil || !slices.Equal(res.Messages, []chat.Outcome{chat.Accepted}) {
		t.Fatalf("first: %+v, %v", res, err)
	}
	res, err = n.p.Receive(ctx, node, Remote{Messages: []*eventstore.Message{&copyOf, remoteMessage("n2", "next")}})
	if err != nil || !slices.Equal(res.Messages, []chat.Outcome{chat.Duplicate, chat.Accepted}) {
		t.Fatalf("again: %+v, %v", res, err)
	}
	got := n.published(t)
	if len(got) != 2 || got[0] != "cluster message "+m.MsgID {
		t.Fatalf("published %v, want the message once and the next one", got)
	}
}

func TestPipelineDeletesAndReactionsWaitForTheirMessage(t *testing.T) {
	ctx := context.Background()
	n := newPipelineNode(t)
	root := remoteMessage("n2", "root")
	del := func(origin string) eventstore.Deletion {
		return eventstore.Deletion{RootMsgID: root.MsgID, At: time.Now(), Origin: origin, Venue: "#x",
			Deleter: eventstore.Deleter{Sender: "a!u@h", SenderDID: "did:plc:alice", Tags: map[string]string{"+draft/delete": root.MsgID}}}
	}
	react := eventstore.ReactionEvent{EventID: ulid.Make().String(), Origin: "n2", Root: root.MsgID, Reactor: "did:plc:alice",
		ReactorNick: "a", Emoji: "👍", At: time.Now(), Venue: "#x", Sender: "a!u@h", SenderDID: "did:plc:alice"}
	ordered := Source{Peer: Member{DID: "did:web:n2", Trust: TrustCluster}, Kind: stream.Cluster, Ordered: true}
	pushed := ordered
	pushed.Ordered = false
	server := Source{Peer: Member{DID: "did:web:b.example", Trust: TrustFull}, Kind: stream.Federation,
		Authority: func(stream.Item) *chat.Authority {
			return &chat.Authority{IsOp: func(string, string) bool { return false },
				Signature: func(eventstore.Message) chat.Outcome { return chat.Accepted }}
		}}

	for _, tc := range []struct {
		name         string
		src          Source
		b            Remote
		dels, reacts []chat.Outcome
	}{
		{"a pulled log waits", ordered, Remote{Deletions: []eventstore.Deletion{del("n2"), del("n2")},
			Reactions: []eventstore.ReactionEvent{react, react}}, []chat.Outcome{chat.Wait, chat.Wait}, []chat.Outcome{chat.Wait, chat.Wait}},
		{"a push skips", pushed, Remote{Reactions: []eventstore.ReactionEvent{react}}, nil, []chat.Outcome{chat.Wait}},
		{"a server's reaction has no root", server, Remote{Reactions: []eventstore.ReactionEvent{react}}, nil, []chat.Outcome{NoRoot}},
	} {
		res, err := n.p.Receive(ctx, tc.src, tc.b)
		if err != nil || !slices.Equal(res.Deletions, tc.dels) || !slices.Equal(res.Reactions, tc.reacts) {
			t.Fatalf("%s: %+v, %v", tc.name, res, err)
		}
	}
	if got := n.published(t); len(got) != 0 {
		t.Fatalf("published %v before the message arrived", got)
	}

	if _, err := n.p.Receive(ctx, ordered, Remote{Messages: []*eventstore.Message{root}}); err != nil {
		t.Fatal(err)
	}
	res, err := n.p.Receive(ctx, ordered, Remote{Reactions: []eventstore.ReactionEvent{react, react}})
	if err != nil || !slices.Equal(res.Reactions, []chat.Outcome{chat.Accepted, chat.Duplicate}) {
		t.Fatalf("reactions: %+v, %v", res, err)
	}
	// A delete made on this node (a server's, made this node's own) is filed in its deletions
	// log; the same delete again is a duplicate.
	res, err = n.p.Receive(ctx, server, Remote{Deletions: []eventstore.Deletion{del("self"), del("self")}})
	if err != nil || !slices.Equal(res.Deletions, []chat.Outcome{chat.Accepted, chat.Duplicate}) {
		t.Fatalf("deletes: %+v, %v", res, err)
	}
	if dels, err := n.store.DeletionsAfter(ctx, "self", 0, 10); err != nil || len(dels) != 1 || dels[0].RootMsgID != root.MsgID {
		t.Fatalf("this node's deletions log: %+v, %v", dels, err)
	}
	want := []string{"cluster message " + root.MsgID, "cluster reaction " + react.EventID, "federation deletion " + root.MsgID}
	if got := n.published(t); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("published %v, want %v", got, want)
	}
}
