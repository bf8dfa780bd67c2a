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
		d    eventstore.Deletion
		auth *Authority
		want Outcome
	}{
		{"cluster: accepted without authority checks", eventstore.Deletion{RootMsgID: root, Venue: "#c", Deleter: eventstore.Deleter{SenderDID: "did:plc:anyone"}}, nil, Accepted},
		{"cluster: message not here yet", eventstore.Deletion{RootMsgID: "01HXZ3K9Q8W2ABCDEFGHJKMNPZ", Venue: "#c"}, nil, Wait},
		{"cluster: another venue", eventstore.Deletion{RootMsgID: root, Venue: "#d"}, nil, Malformed},
		{"cluster: deleted before", eventstore.Deletion{RootMsgID: deleted, Venue: "#c"}, nil, Duplicate},
		{"peer: the author", eventstore.Deletion{RootMsgID: root, Venue: "#c", Deleter: eventstore.Deleter{SenderDID: "did:plc:author", Tags: tags(root)}}, peer, Accepted},
		{"peer: an operator", eventstore.Deletion{RootMsgID: root, Venue: "#c", Deleter: eventstore.Deleter{SenderDID: "did:plc:op", Tags: tags(root)}}, peer, Accepted},
		{"peer: someone else", eventstore.Deletion{RootMsgID: root, Venue: "#c", Deleter: eventstore.Deleter{SenderDID: "did:plc:other", Tags: tags(root)}}, peer, NotOp},
		{"peer: a DID on a guest's message", eventstore.Deletion{RootMsgID: guestRoot, Venue: "#c", Deleter: eventstore.Deleter{SenderDID: "did:plc:x", Sender: "guest!u@h", Tags: tags(guestRoot)}}, peer, NotOp},
		{"peer: tag names another message", eventstore.Deletion{RootMsgID: root, Venue: "#c", Deleter: eventstore.Deleter{SenderDID: "did:plc:author", Tags: tags(guestRoot)}}, peer, Malformed},
		{"peer: unsigned", eventstore.Deletion{RootMsgID: root, Venue: "#c", Deleter: eventstore.Deleter{SenderDID: "did:plc:author", Tags: tags(root)}}, &Authority{IsOp: ops, Signature: unsigned}, Unsigned},
		{"peer: deleted before", eventstore.Deletion{RootMsgID: deleted, Venue: "#c", Deleter: eventstore.Deleter{SenderDID: "did:plc:author", Tags: tags(deleted)}}, peer, Duplicate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, o, err := AcceptDeletion(context.Background(), store, tc.d, tc.auth)
			if err != nil || o != tc.want {
				t.Fatalf("outcome %q, %v; want %q", o, err, tc.want)
			}
			if o == Accepted && got.MsgID != tc.d.RootMsgID {
				t.Errorf("accepted root %q, want %q", got.MsgID, tc.d.RootMsgID)
			}
		})
	}
	if _, _, err := AcceptDeletion(context.Background(), roots{fail: true}, eventstore.Deletion{RootMsgID: root, Venue: "#c"}, nil); err == nil {
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
		e    *eventstore.Message
		auth *Authority
		want Outcome
	}{
		{"cluster: stored even before its root", &eventstore.Message{ReplacesMsgID: "01HXZ3K9Q8W2ABCDEFGHJKMNPZ", Venue: "#c"}, nil, Accepted},
		{"peer: the author", &eventstore.Message{ReplacesMsgID: root, Venue: "#c", SenderDID: "did:plc:author", Tags: tags(root)}, peer, Accepted},
		{"peer: root not here", &eventstore.Message{ReplacesMsgID: "01HXZ3K9Q8W2ABCDEFGHJKMNPZ", Venue: "#c", SenderDID: "did:plc:author"}, peer, Wait},
		{"peer: another venue", &eventstore.Message{ReplacesMsgID: root, Venue: "#d", SenderDID: "did:plc:author", Tags: tags(root)}, peer, Malformed},
		{"peer: someone else", &eventstore.Message{ReplacesMsgID: root, Venue: "#c", SenderDID: "did:plc:other", Tags: tags(root)}, peer, NotAuthor},
		{"peer: a guest's message", &eventstore.Message{ReplacesMsgID: guestRoot, Venue: "#c", SenderDID: "did:plc:x", Tags: tags(guestRoot)}, peer, NotAuthor},
		{"peer: unsigned", &eventstore.Message{ReplacesMsgID: root, Venue: "#c", SenderDID: "did:plc:author", Tags: tags(root)}, &Authority{Signature: func(eventstore.Message) Outcome { return Unsigned }}, Unsigned},
	} {
		if o, err := AcceptEdit(context.Background(), store, tc.e, tc.auth); err != nil || o != tc.want {
			t.Errorf("%s: outcome %q, %v; want %q", tc.name, o, err, tc.want)
		}
	}
}
