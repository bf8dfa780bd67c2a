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

	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/eventstore"
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
	n.p = NewPipeline(chat.New(chat.Config{Store: store, Stored: n.st, NodeName: "self", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
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
	node := clusterSource("n2", false)
	readonly := Source{Peer: Member{DID: "did:web:ro.example", Trust: TrustReadonly}, Source: chat.Source{Kind: stream.Federation}}
	relay := Source{Peer: Member{DID: "did:web:relay.example", Trust: TrustRelay}, Source: chat.Source{Kind: stream.Federation}}

	m := remoteMessage("n2", "hello")
	res, err := n.p.Receive(ctx, readonly, chat.Batch{Messages: []*eventstore.Message{m},
		Deletions: []eventstore.Deletion{{RootMsgID: m.MsgID, Venue: "#x"}}})
	if err != nil || !slices.Equal(res.Messages, []chat.Outcome{NotAllowed}) || !slices.Equal(res.Deletions, []chat.Outcome{NotAllowed}) {
		t.Fatalf("readonly: %+v, %v", res, err)
	}
	if c, _ := n.store.Count(ctx); c != 0 {
		t.Fatalf("a readonly peer's message was stored (%d rows)", c)
	}

	copyOf := *m
	res, err = n.p.Receive(ctx, node, chat.Batch{Messages: []*eventstore.Message{m}})
	if err != nil || !slices.Equal(res.Messages, []chat.Outcome{chat.Accepted}) {
		t.Fatalf("first: %+v, %v", res, err)
	}
	res, err = n.p.Receive(ctx, node, chat.Batch{Messages: []*eventstore.Message{&copyOf, remoteMessage("n2", "next")}})
	if err != nil || !slices.Equal(res.Messages, []chat.Outcome{chat.Duplicate, chat.Accepted}) {
		t.Fatalf("again: %+v, %v", res, err)
	}
	got := n.published(t)
	if len(got) != 2 || got[0] != "cluster message "+m.MsgID {
		t.Fatalf("published %v, want the message once and the next one", got)
	}

	fromRelay := remoteMessage("self", "a server's message, made this node's own")
	res, err = n.p.Receive(ctx, relay, chat.Batch{Messages: []*eventstore.Message{fromRelay}})
	if err != nil || !slices.Equal(res.Messages, []chat.Outcome{chat.Accepted}) {
		t.Fatalf("relay: %+v, %v", res, err)
	}
	if got := n.published(t); len(got) != 1 || got[0] != "federation message "+fromRelay.MsgID {
		t.Fatalf("published %v, want the relay's message from federation", got)
	}
}
