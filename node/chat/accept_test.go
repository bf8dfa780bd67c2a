package chat

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/node/eventstore"
)

// roots is a Store of root messages by msgid; fail makes every lookup fail.
type roots struct {
	m    map[string]eventstore.Message
	fail bool
}

func (r roots) Root(_ context.Context, msgid string) (eventstore.Message, error) {
	if r.fail {
		return eventstore.Message{}, errors.New("disk on fire")
	}
	m, ok := r.m[msgid]
	if !ok {
		return m, eventstore.ErrNotFound
	}
	return m, nil
}

func TestAcceptDeletion(t *testing.T) {
	const root, guestRoot, deleted = "01HXZ3K9Q8W2ABCDEFGHJKMNPA", "01HXZ3K9Q8W2ABCDEFGHJKMNPB", "01HXZ3K9Q8W2ABCDEFGHJKMNPC"
	store := roots{m: map[string]eventstore.Message{
		root:      {MsgID: root, Venue: "#c", SenderDID: "did:plc:author", SenderNick: "author"},
		guestRoot: {MsgID: guestRoot, Venue: "#c", SenderNick: "guest"},
		deleted:   {MsgID: deleted, Venue: "#c", SenderDID: "did:plc:author", DeletedAt: time.Now()},
	}}
	signed := func(root eventstore.Message) Outcome { return Accepted }
	unsigned := func(root eventstore.Message) Outcome { return Unsigned }
	ops := func(venue, did string) bool { return venue == "#c" && did == "did:plc:op" }
	peer := &Authority{IsOp: ops, Signature: signed}
	tags := func(id string) map[string]string { return map[string]string{"+draft/delete": id} }
	for _, tc := range []struct {
		name string
		d    RemoteDeletion
		want Outcome
	}{
		{"cluster: accepted without authority checks", RemoteDeletion{Root: root, Venue: "#c", DeleterDID: "did:plc:anyone"}, Accepted},
		{"cluster: message not here yet", RemoteDeletion{Root: "01HXZ3K9Q8W2ABCDEFGHJKMNPZ", Venue: "#c"}, Wait},
		{"cluster: another venue", RemoteDeletion{Root: root, Venue: "#d"}, Malformed},
		{"cluster: deleted before", RemoteDeletion{Root: deleted, Venue: "#c"}, Duplicate},
		{"peer: the author", RemoteDeletion{Root: root, Venue: "#c", DeleterDID: "did:plc:author", Tags: tags(root), Authority: peer}, Accepted},
		{"peer: an operator", RemoteDeletion{Root: root, Venue: "#c", DeleterDID: "did:plc:op", Tags: tags(root), Authority: peer}, Accepted},
		{"peer: someone else", RemoteDeletion{Root: root, Venue: "#c", DeleterDID: "did:plc:other", Tags: tags(root), Authority: peer}, NotOp},
		{"peer: a DID on a guest's message", RemoteDeletion{Root: guestRoot, Venue: "#c", DeleterDID: "did:plc:x", DeleterNick: "guest", Tags: tags(guestRoot), Authority: peer}, NotOp},
		{"peer: tag names another message", RemoteDeletion{Root: root, Venue: "#c", DeleterDID: "did:plc:author", Tags: tags(guestRoot), Authority: peer}, Malformed},
		{"peer: unsigned", RemoteDeletion{Root: root, Venue: "#c", DeleterDID: "did:plc:author", Tags: tags(root), Authority: &Authority{IsOp: ops, Signature: unsigned}}, Unsigned},
		{"peer: deleted before", RemoteDeletion{Root: deleted, Venue: "#c", DeleterDID: "did:plc:author", Tags: tags(deleted), Authority: peer}, Duplicate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, o, err := AcceptDeletion(context.Background(), store, tc.d)
			if err != nil || o != tc.want {
				t.Fatalf("outcome %q, %v; want %q", o, err, tc.want)
			}
			if o == Accepted && got.MsgID != tc.d.Root {
				t.Errorf("accepted root %q, want %q", got.MsgID, tc.d.Root)
			}
		})
	}
	if _, _, err := AcceptDeletion(context.Background(), roots{fail: true}, RemoteDeletion{Root: root, Venue: "#c"}); err == nil {
		t.Error("a store failure was not reported")
	}
}

func TestAcceptEdit(t *testing.T) {
	const root, guestRoot = "01HXZ3K9Q8W2ABCDEFGHJKMNPA", "01HXZ3K9Q8W2ABCDEFGHJKMNPB"
	store := roots{m: map[string]eventstore.Message{
		root:      {MsgID: root, Venue: "#c", SenderDID: "did:plc:author"},
		guestRoot: {MsgID: guestRoot, Venue: "#c", SenderNick: "guest"},
	}}
	peer := &Authority{IsOp: func(string, string) bool { return true }, Signature: func(eventstore.Message) Outcome { return Accepted }}
	tags := func(id string) map[string]string { return map[string]string{"+draft/edit": id} }
	for _, tc := range []struct {
		name string
		e    RemoteEdit
		want Outcome
	}{
		{"cluster: stored even before its root", RemoteEdit{Replaces: "01HXZ3K9Q8W2ABCDEFGHJKMNPZ", Venue: "#c"}, Accepted},
		{"peer: the author", RemoteEdit{Replaces: root, Venue: "#c", EditorDID: "did:plc:author", Tags: tags(root), Authority: peer}, Accepted},
		{"peer: root not here", RemoteEdit{Replaces: "01HXZ3K9Q8W2ABCDEFGHJKMNPZ", Venue: "#c", EditorDID: "did:plc:author", Authority: peer}, Wait},
		{"peer: another venue", RemoteEdit{Replaces: root, Venue: "#d", EditorDID: "did:plc:author", Tags: tags(root), Authority: peer}, Malformed},
		{"peer: someone else", RemoteEdit{Replaces: root, Venue: "#c", EditorDID: "did:plc:other", Tags: tags(root), Authority: peer}, NotAuthor},
		{"peer: a guest's message", RemoteEdit{Replaces: guestRoot, Venue: "#c", EditorDID: "did:plc:x", Tags: tags(guestRoot), Authority: peer}, NotAuthor},
		{"peer: unsigned", RemoteEdit{Replaces: root, Venue: "#c", EditorDID: "did:plc:author", Tags: tags(root),
			Authority: &Authority{Signature: func(eventstore.Message) Outcome { return Unsigned }}}, Unsigned},
	} {
		if o, err := AcceptEdit(context.Background(), store, tc.e); err != nil || o != tc.want {
			t.Errorf("%s: outcome %q, %v; want %q", tc.name, o, err, tc.want)
		}
	}
}
