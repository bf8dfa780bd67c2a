package chat

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/node/stream"
	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

// published records what the service publishes.
type published struct {
	mu    sync.Mutex
	items []stream.Item
}

func (p *published) Publish(it stream.Item) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.items = append(p.items, it)
}

func (p *published) take() []stream.Item {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.items
	p.items = nil
	return out
}

type fixture struct {
	t     *testing.T
	state *fsmtest.Machine
	store *eventstore.Store
	pub   *published
	key   ed25519.PrivateKey
	svc   *Service
	// users: an op (DID), a member with a DID and a session key, a guest member, an outsider
	op, alice, guest, outsider Sender
	aliceKey                   ed25519.PrivateKey
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	store, err := eventstore.Open(context.Background(), eventstore.Options{Path: filepath.Join(t.TempDir(), "events.db"),
		NoSync: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	alicePub, aliceKey, _ := ed25519.GenerateKey(rand.Reader)
	f := &fixture{t: t, state: fsmtest.New(), store: store, pub: &published{}, key: key, aliceKey: aliceKey}
	f.svc = New(Config{State: f.state, Store: store, Key: key, Stored: f.pub, NodeName: "n1",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	f.op = Sender{Session: "s-op", Nick: "op", Mask: "op!u@h", DID: "did:plc:op"}
	f.alice = Sender{Session: "s-alice", Nick: "alice", Mask: "alice!u@h", DID: "did:plc:alice",
		SessionKey: alicePub, SessionKID: signing.KID(alicePub)}
	f.guest = Sender{Session: "s-guest", Nick: "guest", Mask: "guest!u@h"}
	f.outsider = Sender{Session: "s-out", Nick: "outsider", Mask: "outsider!u@h"}
	f.state.MustOK(t, fsmtest.Session("s-op", "op", "did:plc:op"), fsmtest.Session("s-alice", "alice", "did:plc:alice"),
		fsmtest.Session("s-guest", "guest", ""), fsmtest.Session("s-out", "outsider", ""),
		fsm.Join{Session: "s-op", Channel: "#c"}, fsm.Join{Session: "s-alice", Channel: "#c"},
		fsm.Join{Session: "s-guest", Channel: "#c"}) // +n by default
	return f
}

// send prepares and commits d, failing the test on a refusal.
func (f *fixture) send(d Draft) *Write {
	f.t.Helper()
	w, r := f.svc.Send(context.Background(), d)
	if r != nil {
		f.t.Fatalf("send %+v: %v", d, r)
	}
	return w
}

// signedBy signs d's tags as its sender would, with key, for the msgid it chooses.
func signedBy(t *testing.T, key ed25519.PrivateKey, d Draft) Draft {
	t.Helper()
	id := ulid.Make().String()
	tags := CopyTags(d.Tags)
	venue, err := signing.ParseVenue(d.Venue)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := signing.DocumentFromTags(d.Command, signing.Envelope{From: d.DID, MsgID: id, Venue: venue}, d.Text, tags)
	if err != nil {
		t.Fatal(err)
	}
	canonical, err := doc.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	tags[TagEventID] = id
	tags[TagSig] = signing.Sign(key, canonical)
	d.Tags = tags
	return d
}

func TestSendStoresSignsAndPublishes(t *testing.T) {
	f := newFixture(t)
	w := f.send(Draft{Sender: f.op, Command: "PRIVMSG", Venue: "#c", Text: "hello"})
	if w.Kind != Message {
		t.Fatalf("kind %v, want Message", w.Kind)
	}
	got, err := f.store.Get(context.Background(), w.Event.MsgID)
	if err != nil {
		t.Fatalf("not stored: %v", err)
	}
	if got.Text != "hello" || got.SenderDID != "did:plc:op" || got.Origin != "n1" {
		t.Errorf("stored %+v", got)
	}
	venue, _ := signing.ChannelVenue("#c")
	doc, _ := signing.DocumentFromTags("PRIVMSG", signing.Envelope{From: "did:plc:op", MsgID: w.Event.MsgID, Venue: venue}, "hello", map[string]string{})
	canonical, _ := doc.Canonical()
	pub := f.key.Public().(ed25519.PublicKey)
	if v, reason := signing.Verify(canonical, got.Tags[TagSig], func(string) (ed25519.PublicKey, bool) { return pub, true }); v != signing.Valid {
		t.Errorf("server signature: %v %v", v, reason)
	}
	items := f.pub.take()
	if len(items) != 1 || items[0].Kind != stream.KindMessage || items[0].Source != stream.Local || items[0].Message.MsgID != w.Event.MsgID {
		t.Fatalf("published %+v", items)
	}
	// A guest's message is stored unsigned.
	w = f.send(Draft{Sender: f.guest, Command: "PRIVMSG", Venue: "#c", Text: "hi"})
	if _, ok := w.Event.Tags[TagSig]; ok {
		t.Error("a guest's message was signed")
	}
	// A sender's own valid signature is kept byte for byte.
	d := signedBy(t, f.aliceKey, Draft{Sender: f.alice, Command: "PRIVMSG", Venue: "#c", Text: "mine"})
	w = f.send(d)
	if w.Event.Tags[TagSig] != d.Tags[TagSig] || w.Event.MsgID != d.Tags[TagEventID] {
		t.Errorf("own signature not kept: %+v", w.Event)
	}
}

func TestPrepareRefusals(t *testing.T) {
	f := newFixture(t)
	root := f.send(Draft{Sender: f.alice, Command: "PRIVMSG", Venue: "#c", Text: "root"}).Event.MsgID
	guestRoot := f.send(Draft{Sender: f.guest, Command: "PRIVMSG", Venue: "#c", Text: "guest root"}).Event.MsgID
	f.pub.take()
	operOutsider := f.outsider
	operOutsider.Oper = true
	stale := ulid.MustNew(ulid.Timestamp(time.Now().Add(-time.Hour)), rand.Reader).String()
	badSig := signedBy(t, f.aliceKey, Draft{Sender: f.alice, Command: "PRIVMSG", Venue: "#c", Text: "x"})
	badSig.Text = "not what was signed"
	for _, tc := range []struct {
		name          string
		d             Draft
		numeric, code string
		command       string
	}{
		{"no such channel", Draft{Sender: f.op, Command: "PRIVMSG", Venue: "#none", Text: "x"}, "403", "", "PRIVMSG"},
		{"+n outsider", Draft{Sender: f.outsider, Command: "PRIVMSG", Venue: "#c", Text: "x"}, "404", "", "PRIVMSG"},
		{"surface check", Draft{Sender: f.op, Command: "PRIVMSG", Venue: "#c", Text: "x",
			Check: func() *Refusal { return fail("PRIVMSG", "NO_WAY", "refused by a surface") }}, "", "NO_WAY", "PRIVMSG"},
		{"guest chooses an event id", Draft{Sender: f.guest, Command: "PRIVMSG", Venue: "#c", Text: "x",
			Tags: map[string]string{TagEventID: ulid.Make().String()}}, "", "EVENTID_NOT_AUTHENTICATED", "PRIVMSG"},
		{"malformed event id", Draft{Sender: f.op, Command: "PRIVMSG", Venue: "#c", Text: "x",
			Tags: map[string]string{TagEventID: "nope"}}, "", "INVALID_EVENTID", "PRIVMSG"},
		{"event id of another time", Draft{Sender: f.op, Command: "PRIVMSG", Venue: "#c", Text: "x",
			Tags: map[string]string{TagEventID: stale}}, "", "EVENTID_CLOCK_SKEW", "PRIVMSG"},
		{"edit of a status message", Draft{Sender: f.guest, Command: "PRIVMSG", Venue: "#c", Status: "@", Text: "x",
			Tags: map[string]string{"+draft/edit": guestRoot}}, "", "INVALID_TARGET", "PRIVMSG"},
		{"edit of an unknown message", Draft{Sender: f.guest, Command: "PRIVMSG", Venue: "#c", Text: "x",
			Tags: map[string]string{"+draft/edit": ulid.Make().String()}}, "", "MESSAGE_NOT_FOUND", "EDIT"},
		{"edit by another", Draft{Sender: f.guest, Command: "PRIVMSG", Venue: "#c", Text: "x",
			Tags: map[string]string{"+draft/edit": root}}, "", "AUTHOR_MISMATCH", "EDIT"},
		{"delete by another, no operator", Draft{Sender: f.guest, Command: "TAGMSG", Venue: "#c",
			Tags: map[string]string{"+draft/delete": root}}, "", "AUTHOR_MISMATCH", "DELETE"},
		{"unsigned edit by a DID", Draft{Sender: f.alice, Command: "PRIVMSG", Venue: "#c", Text: "x",
			Tags: map[string]string{"+draft/edit": root}}, "", "SIGNATURE_REQUIRED", "EDIT"},
		{"a signature over another text", badSig, "", "SIGNATURE_INVALID", "PRIVMSG"},
		{"reaction by a non-member", Draft{Sender: operOutsider, Command: "TAGMSG", Venue: "#c",
			Tags: map[string]string{"+react": "👍", "+reply": root}}, "442", "", "TAGMSG"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, r := f.svc.Prepare(context.Background(), tc.d)
			if r == nil {
				t.Fatalf("prepared %+v, want a refusal", w)
			}
			if r.Numeric != tc.numeric || r.Code != tc.code || r.Command != tc.command || r.Text == "" {
				t.Errorf("refusal %+v, want numeric %q code %q command %q", r, tc.numeric, tc.code, tc.command)
			}
		})
	}
	if items := f.pub.take(); len(items) != 0 {
		t.Errorf("a refusal published %+v", items)
	}
}

func TestEditDeleteReact(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	root := f.send(Draft{Sender: f.guest, Command: "PRIVMSG", Venue: "#c", Text: "root"}).Event.MsgID
	edit, r := f.svc.Edit(ctx, Draft{Sender: f.guest, Venue: "#c", Text: "root, revised"}, root)
	if r != nil || edit.Kind != Message || edit.Event.ReplacesMsgID != root {
		t.Fatalf("edit %+v %v", edit, r)
	}
	if cur, err := f.store.Current(ctx, root); err != nil || cur.Text != "root, revised" {
		t.Errorf("current %+v %v", cur, err)
	}
	react, r := f.svc.React(ctx, Draft{Sender: f.guest, Venue: "#c"}, edit.Event.MsgID, "👍", false)
	if r != nil || react.Kind != Reaction || react.Reaction.Root != root || react.Event.Tags["+reply"] != root {
		t.Fatalf("react %+v %v", react, r)
	}
	if tallies, err := f.store.Reactions(ctx, []string{root}); err != nil || tallies[root]["👍"] != 1 {
		t.Errorf("tallies %v %v", tallies, err)
	}
	// An operator deletes another's message; the delete is filed with its event id.
	del, r := f.svc.Delete(ctx, Draft{Sender: f.op, Venue: "#c"}, root)
	if r == nil {
		t.Fatalf("an unsigned delete by a DID was accepted: %+v", del)
	}
	del, r = f.svc.Send(ctx, signedBy(t, f.aliceKey, Draft{Sender: f.alice, Command: "TAGMSG", Venue: "#c",
		Tags: map[string]string{"+draft/delete": root}}))
	if r == nil || r.Code != "AUTHOR_MISMATCH" {
		t.Fatalf("a member deleted another's message: %+v %v", del, r)
	}
	del, r = f.svc.Delete(ctx, Draft{Sender: f.guest, Venue: "#c"}, root)
	if r != nil || del.Kind != Deletion || del.Deletion.Tags[DeletionEventIDTag] != del.Event.MsgID {
		t.Fatalf("delete %+v %v", del, r)
	}
	if got, err := f.store.Root(ctx, root); err != nil || got.DeletedAt.IsZero() {
		t.Errorf("root after delete %+v %v", got, err)
	}
	// Editing a deleted message is refused silently.
	if _, r := f.svc.Edit(ctx, Draft{Sender: f.guest, Venue: "#c", Text: "again"}, root); r == nil || r.Code != "" || r.Numeric != "" {
		t.Errorf("edit of a deleted message: %+v", r)
	}
	var kinds []stream.Kind
	for _, it := range f.pub.take() {
		kinds = append(kinds, it.Kind)
	}
	want := []stream.Kind{stream.KindMessage, stream.KindMessage, stream.KindReaction, stream.KindDeletion}
	if !slices.Equal(kinds, want) {
		t.Errorf("published %v, want %v", kinds, want)
	}
}

func TestCommitKinds(t *testing.T) {
	f := newFixture(t)
	f.svc.cfg.PersistTags = DefaultPersistTags
	ctx := context.Background()
	persist := map[string]string{"+draft/persist": "", "+client-only-tag-test": "success"}
	for _, tc := range []struct {
		name string
		d    Draft
		want WriteKind
	}{
		{"channel message", Draft{Sender: f.guest, Command: "PRIVMSG", Venue: "#c", Text: "x"}, Message},
		{"typing", Draft{Sender: f.guest, Command: "TAGMSG", Venue: "#c", Tags: map[string]string{"+typing": "active"}}, Relay},
		{"status message", Draft{Sender: f.op, Command: "PRIVMSG", Venue: "#c", Status: "@", Text: "ops"}, Relay},
		{"DM between DIDs", Draft{Sender: f.op, Command: "PRIVMSG", Venue: DMVenue("did:plc:op", "did:plc:zed"), Text: "x"}, Message},
		{"DM between two guests", Draft{Sender: f.guest, Command: "PRIVMSG", Text: "x"}, Deliver},
		{"DM TAGMSG", Draft{Sender: f.op, Command: "TAGMSG", Venue: DMVenue("did:plc:op", "did:plc:zed")}, Deliver},
		{"kept channel TAGMSG", Draft{Sender: f.guest, Command: "TAGMSG", Venue: "#c", Tags: persist}, Message},
		{"kept by +persist", Draft{Sender: f.guest, Command: "TAGMSG", Venue: "#c", Tags: map[string]string{"+persist": "1"}}, Message},
		{"kept DM TAGMSG", Draft{Sender: f.op, Command: "TAGMSG", Venue: DMVenue("did:plc:op", "did:plc:zed"), Tags: persist}, Message},
		{"persist tag on a status TAGMSG", Draft{Sender: f.op, Command: "TAGMSG", Venue: "#c", Status: "@", Tags: persist}, Relay},
		{"persist tag between two guests", Draft{Sender: f.guest, Command: "TAGMSG", Tags: persist}, Deliver},
		{"persist tag on a PRIVMSG", Draft{Sender: f.guest, Command: "PRIVMSG", Venue: "#c", Text: "x", Tags: persist}, Message},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, r := f.svc.Prepare(ctx, tc.d)
			if r != nil {
				t.Fatal(r)
			}
			if w.Kind != tc.want {
				t.Fatalf("kind %v, want %v", w.Kind, tc.want)
			}
			if rs := f.svc.Commit(ctx, w); rs[0] != nil {
				t.Fatal(rs[0])
			}
			items := f.pub.take()
			switch tc.want {
			case Deliver:
				if len(items) != 0 {
					t.Errorf("published %+v", items)
				}
			case Relay:
				if len(items) != 1 || items[0].Kind != stream.KindEphemeral {
					t.Errorf("published %+v", items)
				}
				if _, err := f.store.Get(ctx, w.Event.MsgID); !errors.Is(err, eventstore.ErrNotFound) {
					t.Errorf("a relayed event was stored: %v", err)
				}
			case Message:
				if len(items) != 1 || items[0].Kind != stream.KindMessage {
					t.Errorf("published %+v", items)
				}
				got, err := f.store.Get(ctx, w.Event.MsgID)
				if err != nil || got.Command != tc.d.Command {
					t.Errorf("stored %+v, %v", got, err)
				}
			}
		})
	}
	// A kept TAGMSG has no text: an edit or a reaction aimed at it finds no message, and its
	// sender may still delete it.
	kept, r := f.svc.Prepare(ctx, Draft{Sender: f.guest, Command: "TAGMSG", Venue: "#c", Tags: persist})
	if r != nil {
		t.Fatal(r)
	}
	if rs := f.svc.Commit(ctx, kept); rs[0] != nil {
		t.Fatal(rs[0])
	}
	f.pub.take()
	for name, d := range map[string]Draft{
		"edit":     {Sender: f.guest, Command: "PRIVMSG", Venue: "#c", Text: "y", Tags: map[string]string{"+draft/edit": kept.Event.MsgID}},
		"reaction": {Sender: f.guest, Command: "TAGMSG", Venue: "#c", Tags: map[string]string{"+draft/react": "👍", "+draft/reply": kept.Event.MsgID}},
	} {
		if _, r := f.svc.Prepare(ctx, d); r == nil || r.Code != "MESSAGE_NOT_FOUND" {
			t.Errorf("%s of a kept TAGMSG: %+v", name, r)
		}
	}
	if _, r := f.svc.Prepare(ctx, Draft{Sender: f.guest, Command: "TAGMSG", Venue: "#c", Tags: map[string]string{"+draft/delete": kept.Event.MsgID}}); r != nil {
		t.Errorf("delete of a kept TAGMSG: %+v", r)
	}
	// While a node of the cluster would take it for a message, no TAGMSG is kept.
	f.svc.cfg.PersistReady = func() bool { return false }
	for venue, want := range map[string]WriteKind{"#c": Relay, DMVenue("did:plc:op", "did:plc:zed"): Deliver} {
		if w, r := f.svc.Prepare(ctx, Draft{Sender: f.op, Command: "TAGMSG", Venue: venue, Tags: persist}); r != nil || w.Kind != want {
			t.Fatalf("%s while the cluster is upgrading: %+v, %v", venue, w, r)
		}
	}
	f.svc.cfg.PersistReady = nil
	// An empty persist list keeps no TAGMSG.
	f.svc.cfg.PersistTags = nil
	if w, r := f.svc.Prepare(ctx, Draft{Sender: f.guest, Command: "TAGMSG", Venue: "#c", Tags: persist}); r != nil || w.Kind != Relay {
		t.Fatalf("without a persist list: %+v, %v", w, r)
	}
	// One commit of several writes: the duplicate alone is refused and not published.
	a, _ := f.svc.Prepare(ctx, Draft{Sender: f.guest, Command: "PRIVMSG", Venue: "#c", Text: "a"})
	b, _ := f.svc.Prepare(ctx, Draft{Sender: f.guest, Command: "PRIVMSG", Venue: "#c", Text: "b"})
	if rs := f.svc.Commit(ctx, a); rs[0] != nil {
		t.Fatal(rs[0])
	}
	f.pub.take()
	again := *a
	rs := f.svc.Commit(ctx, &again, b)
	if rs[0] == nil || rs[0].Code != "EVENTID_IN_USE" || rs[1] != nil {
		t.Fatalf("refusals %v, %v", rs[0], rs[1])
	}
	if items := f.pub.take(); len(items) != 1 || items[0].Message.MsgID != b.Event.MsgID {
		t.Errorf("published %+v", items)
	}
}

func TestSendAsNode(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	w, err := f.svc.SendAsNode(ctx, Draft{Sender: Sender{Nick: "irc.test", Mask: "irc.test"}, Command: "NOTICE", Venue: "#c", Text: "notice"}, true)
	if err != nil || w.Event.SenderDID != "did:web:n1" || w.Event.Tags[TagSig] == "" {
		t.Fatalf("node message %+v %v", w, err)
	}
	if _, err := f.store.Get(ctx, w.Event.MsgID); err != nil {
		t.Errorf("not stored: %v", err)
	}
	if _, err := f.svc.SendAsNode(ctx, Draft{Command: "NOTICE", Venue: "dm:a,b", Text: "x"}, true); err == nil {
		t.Error("a node message to a DM venue was sent")
	}
}

// TestSendAsNodeKeepsItsSignature: a document the node already signed (an act receipt) keeps its
// id and signature; a signature that is not the node's over it is refused.
func TestSendAsNodeKeepsItsSignature(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	id := ulid.Make().String()
	tags := map[string]string{"+freeq.at/act": "handoff", "+freeq.at/act-verb": "confirm", "+freeq.at/act-id": id,
		"+freeq.at/act-subject": id, "+freeq.at/from": "did:web:n1"}
	venue, _ := signing.ChannelVenue("#c")
	canonical, err := signing.Act{ID: id, Venue: venue, Tags: tags}.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	sig := signing.Sign(f.key, canonical)
	draft := func(sig string) Draft {
		d := Draft{Sender: Sender{Nick: "irc.test", Mask: "irc.test"}, Command: "TAGMSG", Venue: "#c", Tags: CopyTags(tags)}
		d.Tags[TagEventID], d.Tags[TagSig] = id, sig
		return d
	}
	w, err := f.svc.SendAsNode(ctx, draft(sig), false)
	if err != nil || w.Event.MsgID != id || w.Event.Tags[TagSig] != sig || w.Event.Tags[TagEventID] != "" {
		t.Fatalf("node message %+v %v", w, err)
	}
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	if _, err := f.svc.SendAsNode(ctx, draft(signing.Sign(other, canonical)), false); err == nil {
		t.Fatal("another key's signature was carried")
	}
}

// TestDeliverAsNode: a node's own delivery gets its msgid from the service (or the derived one)
// and the node's signature when it is a document.
func TestDeliverAsNode(t *testing.T) {
	f := newFixture(t)
	m, err := f.svc.DeliverAsNode(Draft{Command: "NOTICE", Venue: DMVenue("did:web:n1", "did:plc:alice"), Text: "refused"}, "", time.Time{})
	if err != nil || m.MsgID == "" || m.SenderDID != "did:web:n1" || m.Tags[TagSig] == "" || m.Origin != "n1" {
		t.Fatalf("notice %+v %v", m, err)
	}
	at := time.UnixMilli(1_800_000_000_000)
	m, err = f.svc.DeliverAsNode(Draft{Command: "TAGMSG", Venue: "#c", Tags: map[string]string{"+freeq.at/av-state": "started"}}, "01J0000000000000000000000A", at)
	if err != nil || m.MsgID != "01J0000000000000000000000A" || !m.Time.Equal(at) || m.Tags[TagSig] != "" {
		t.Fatalf("announcement %+v %v", m, err)
	}
	if _, err := f.svc.DeliverAsNode(Draft{Command: "NOTICE", Venue: "nowhere", Text: "x"}, "", time.Time{}); err == nil {
		t.Fatal("a delivery to no venue")
	}
}

// invalidStore refuses, as invalid, every Append that holds the message bad.
type invalidStore struct {
	Store
	bad string
}

func (s *invalidStore) Append(_ context.Context, msgs ...*eventstore.Message) error {
	for _, m := range msgs {
		if m.MsgID == s.bad {
			return fmt.Errorf("%w: message %s", eventstore.ErrInvalidArgument, m.MsgID)
		}
	}
	for i, m := range msgs {
		m.Seq = int64(i + 1)
	}
	return nil
}

// TestCommitSplitsInvalidBatches checks that a batch refused as invalid is stored message by
// message, so one bad message fails alone.
func TestCommitSplitsInvalidBatches(t *testing.T) {
	pub := &published{}
	svc := New(Config{Store: &invalidStore{bad: "bad"}, Stored: pub, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	var writes []*Write
	for _, id := range []string{"a", "bad", "b"} {
		writes = append(writes, &Write{Kind: Message, Event: eventstore.Message{MsgID: id, Venue: "#c", Command: "PRIVMSG"}})
	}
	rs := svc.Commit(context.Background(), writes...)
	for i, want := range []bool{false, true, false} {
		if got := rs[i] != nil; got != want {
			t.Errorf("%s: refusal %v", writes[i].Event.MsgID, rs[i])
		}
	}
	if rs[1] == nil || rs[1].Code != "TEMPORARILY_UNAVAILABLE" || !errors.Is(rs[1], eventstore.ErrInvalidArgument) {
		t.Errorf("bad: %v, want TEMPORARILY_UNAVAILABLE wrapping ErrInvalidArgument", rs[1])
	}
	if items := pub.take(); len(items) != 2 {
		t.Errorf("published %d items, want 2", len(items))
	}
}

// TestReactWithoutReply: a react tag that names no message (+reply) reacts to nothing; the TAGMSG
// is an ordinary one, relayed with its tags and filed as no reaction.
func TestReactWithoutReply(t *testing.T) {
	f := newFixture(t)
	w := f.send(Draft{Sender: f.guest, Command: "TAGMSG", Venue: "#c", Tags: map[string]string{"+draft/react": "👍"}})
	if w.Kind == Reaction || w.Reaction != nil || w.Event.Tags["+draft/react"] != "👍" || w.Event.MsgID == "" {
		t.Fatalf("prepared %+v", w)
	}
	if IsReaction("TAGMSG", map[string]string{"+react": "👍"}) || !IsReaction("TAGMSG", map[string]string{"+react": "👍", "+reply": "x"}) {
		t.Fatal("IsReaction without or with +reply")
	}
}
