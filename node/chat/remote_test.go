package chat

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/stream"
)

func remoteMessage(origin, venue, did, nick, text, replaces string) *eventstore.Message {
	return &eventstore.Message{MsgID: ulid.Make().String(), Venue: venue, Command: "PRIVMSG", Sender: nick + "!u@remote",
		SenderNick: nick, SenderDID: did, Text: text, Tags: map[string]string{}, Time: time.Now(), Origin: origin,
		ReplacesMsgID: replaces}
}

func TestAcceptRemoteFromCluster(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	cluster := Source{Kind: stream.Cluster, Ordered: true}
	old := remoteMessage("n2", "#c", "", "bob", "old", "")
	if _, err := f.svc.AcceptRemote(ctx, cluster, Batch{Messages: []*eventstore.Message{old}}); err != nil {
		t.Fatal(err)
	}
	f.pub.take()
	again := *old
	again.Seq = 0
	root := remoteMessage("n2", "#c", "", "bob", "root", "")
	early := remoteMessage("n2", "#c", "", "bob", "an edit that came first", ulid.Make().String())
	res, err := f.svc.AcceptRemote(ctx, cluster, Batch{Messages: []*eventstore.Message{&again, root, early}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Outcome{Duplicate, Accepted, Accepted}; !slices.Equal(res.Messages, want) {
		t.Errorf("messages %v, want %v", res.Messages, want)
	}
	items := f.pub.take()
	if len(items) != 2 || items[0].Source != stream.Cluster || items[0].Message.MsgID != root.MsgID {
		t.Errorf("published %+v", items)
	}
	// Deletes in order: one whose message is not here waits, and so does the rest of the log.
	missing := eventstore.Deletion{Seq: 1, RootMsgID: ulid.Make().String(), Venue: "#c", At: time.Now(), Origin: "n2"}
	del := eventstore.Deletion{Seq: 2, RootMsgID: root.MsgID, Venue: "#c", At: time.Now(), Origin: "n2"}
	res, err = f.svc.AcceptRemote(ctx, cluster, Batch{Deletions: []eventstore.Deletion{missing, del}})
	if err != nil || !slices.Equal(res.Deletions, []Outcome{Wait, Wait}) {
		t.Fatalf("ordered deletions %v %v", res.Deletions, err)
	}
	res, err = f.svc.AcceptRemote(ctx, Source{Kind: stream.Cluster}, Batch{Deletions: []eventstore.Deletion{missing, del}})
	if err != nil || !slices.Equal(res.Deletions, []Outcome{Wait, Accepted}) {
		t.Fatalf("unordered deletions %v %v", res.Deletions, err)
	}
	if got, _ := f.store.Root(ctx, root.MsgID); got.DeletedAt.IsZero() {
		t.Error("the delete was not applied")
	}
	if filed, _ := f.store.DeletionsAfter(ctx, "n1", 0, 10); len(filed) != 0 {
		t.Errorf("another node's delete was filed in this node's log: %+v", filed)
	}
	res, _ = f.svc.AcceptRemote(ctx, cluster, Batch{Deletions: []eventstore.Deletion{del}})
	if !slices.Equal(res.Deletions, []Outcome{Duplicate}) {
		t.Errorf("a repeated delete: %v", res.Deletions)
	}
	// A reaction to a message not here waits; one to a message here is filed and published once.
	react := eventstore.ReactionEvent{EventID: ulid.Make().String(), Origin: "n2", Root: old.MsgID, Reactor: "nick:bob",
		ReactorNick: "bob", Emoji: "👍", At: time.Now(), Venue: "#c", Sender: "bob!u@remote"}
	early2 := react
	early2.EventID, early2.Root = ulid.Make().String(), ulid.Make().String()
	f.pub.take()
	res, err = f.svc.AcceptRemote(ctx, Source{Kind: stream.Cluster}, Batch{Reactions: []eventstore.ReactionEvent{early2, react, react}})
	if err != nil || !slices.Equal(res.Reactions, []Outcome{Wait, Accepted, Duplicate}) {
		t.Fatalf("reactions %v %v", res.Reactions, err)
	}
	if items := f.pub.take(); len(items) != 1 || items[0].Kind != stream.KindReaction {
		t.Errorf("published %+v", items)
	}
}

func TestAcceptRemoteFromFederation(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	signed := &Authority{IsOp: func(venue, did string) bool { return did == "did:plc:op" },
		Signature: func(eventstore.Message) Outcome { return Accepted }}
	unsigned := &Authority{IsOp: signed.IsOp, Signature: func(eventstore.Message) Outcome { return Unsigned }}
	auth := signed
	peer := Source{Kind: stream.Federation, Ordered: true, Authority: func(stream.Item) *Authority { return auth }}
	root := remoteMessage("n1", "#c", "did:web:carol", "carol", "root", "")
	edit := remoteMessage("n1", "#c", "did:web:carol", "carol", "root, revised", root.MsgID)
	edit.Tags["+draft/edit"] = root.MsgID
	forged := remoteMessage("n1", "#c", "did:web:mallory", "mallory", "not yours", root.MsgID)
	forged.Tags["+draft/edit"] = root.MsgID
	waiting := remoteMessage("n1", "#c", "did:web:carol", "carol", "an edit of nothing here", ulid.Make().String())
	after := remoteMessage("n1", "#c", "did:web:carol", "carol", "after the wait", "")
	res, err := f.svc.AcceptRemote(ctx, peer, Batch{Messages: []*eventstore.Message{root, edit, forged, waiting, after}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Outcome{Accepted, Accepted, NotAuthor, Wait, Wait}; !slices.Equal(res.Messages, want) {
		t.Errorf("messages %v, want %v", res.Messages, want)
	}
	for _, it := range f.pub.take() {
		if it.Source != stream.Federation {
			t.Errorf("published with source %v", it.Source)
		}
	}
	del := eventstore.Deletion{RootMsgID: root.MsgID, Venue: "#c", At: time.Now(), Origin: "n1",
		Deleter: eventstore.Deleter{Sender: "carol!u@b.example", SenderDID: "did:web:carol", Tags: map[string]string{"+draft/delete": root.MsgID}}}
	auth = unsigned
	res, err = f.svc.AcceptRemote(ctx, peer, Batch{Deletions: []eventstore.Deletion{del}})
	if err != nil || !slices.Equal(res.Deletions, []Outcome{Unsigned}) {
		t.Fatalf("unsigned delete: %v %v", res.Deletions, err)
	}
	auth = signed
	react := eventstore.ReactionEvent{EventID: ulid.Make().String(), Origin: "n1", Root: ulid.Make().String(), Reactor: "did:web:carol",
		ReactorNick: "carol", Emoji: "👍", At: time.Now(), Venue: "#c", Sender: "carol!u@b.example", SenderDID: "did:web:carol"}
	res, err = f.svc.AcceptRemote(ctx, peer, Batch{Deletions: []eventstore.Deletion{del}, Reactions: []eventstore.ReactionEvent{react}})
	if err != nil || !slices.Equal(res.Deletions, []Outcome{Accepted}) || !slices.Equal(res.Reactions, []Outcome{NoRoot}) {
		t.Fatalf("deletions %v reactions %v %v", res.Deletions, res.Reactions, err)
	}
	// A federated server's delete becomes this node's own: filed in its log for the cluster.
	if filed, err := f.store.DeletionsAfter(ctx, "n1", 0, 10); err != nil || len(filed) != 1 || filed[0].RootMsgID != root.MsgID {
		t.Errorf("filed deletions %+v %v", filed, err)
	}
}
