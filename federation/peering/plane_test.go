package peering

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/raft/fsm"
)

const (
	planeBob    = "did:plc:bobbbbbbbbbbbbbbbbbbbbbbb" // a user of this server, with a session
	planeRemote = "did:web:mallory.a.example"         // a user of the full peer
)

// plane is a federation of did:web:b.example over a real event store, with three configured
// servers serving their did:web documents: a.example (full, #c), relay.example (relay, #r) and
// ro.example (readonly, #ro). bob is a local user with a session and a message in #c.
type plane struct {
	f         *Federation
	store     *eventstore.Store
	now       *time.Time
	full      Peer
	fullKey   ed25519.PrivateKey
	relay     Peer
	relayKey  ed25519.PrivateKey
	ro        Peer
	roKey     ed25519.PrivateKey
	victimMsg string
}

func newPlane(t *testing.T) *plane {
	t.Helper()
	now := time.Now()
	p := &plane{now: &now}
	p.full, p.fullKey = signingPeer(t, "did:web:a.example")
	p.full.Trust = TrustFull
	p.relay, p.relayKey = signingPeer(t, "did:web:relay.example")
	p.ro, p.roKey = signingPeer(t, "did:web:ro.example")
	p.ro.Trust = TrustReadonly
	store, err := eventstore.Open(context.Background(), eventstore.Options{Path: t.TempDir() + "/e.db", NoSync: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	p.store = store
	fx := fsm.NewFixture()
	fx.AddSession(fsm.Session{ID: "s-bob", Nick: "bob", User: "bob", DID: planeBob})
	fx.AddChannel(fsm.Channel{Name: "#c"})
	fx.AddMember("#c", "s-bob", fsm.Member{})
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	p.f, err = New(Config{SendEvery: time.Second, CatchUpWindow: 24 * time.Hour, ServerDID: "did:web:b.example", NodeName: "n1", Key: key, Client: http.DefaultClient,
		Peers: []Peer{p.full, p.relay, p.ro}, Store: store, State: fixedState{fx.State()},
		Links:  []Link{{Channel: "#c", Peer: p.full.DID}, {Channel: "#r", Peer: p.relay.DID}, {Channel: "#ro", Peer: p.ro.DID}},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return *p.now }})
	if err != nil {
		t.Fatal(err)
	}
	p.f.sleep = func(context.Context, time.Duration) error {
		t.Error("a frame waited for the rate limit")
		return nil
	}
	victim := &eventstore.Message{MsgID: ulid.Make().String(), Venue: "#c", Command: "PRIVMSG", Sender: "bob!bob@b.example",
		SenderNick: "bob", SenderDID: planeBob, Text: "the victim's message", Time: now, Origin: "n1"}
	if err := store.Append(context.Background(), victim); err != nil {
		t.Fatal(err)
	}
	p.victimMsg = victim.MsgID
	return p
}

// event is a message of the peer's user in venue, signed with the peer's server key.
func (p *plane) event(key ed25519.PrivateKey, venue, senderDID, nick, text string) exchange.Event {
	msgid := ulid.Make().String()
	v, _ := signing.ParseVenue(venue)
	canonical, _ := signing.Message{Envelope: signing.Envelope{From: senderDID, MsgID: msgid, Venue: v}, Body: text}.Canonical()
	return exchange.Event{OriginSeq: 1, MsgID: msgid, Venue: venue, Command: "PRIVMSG", Sender: nick + "!u@a.example",
		SenderNick: nick, SenderDID: senderDID, Text: text, TimeMS: p.now.UnixMilli(),
		Tags: map[string]string{"+freeq.at/sig": signing.Sign(key, canonical)}}
}

// deletion is a delete of root by senderDID, signed with key, as the stream carries it (the
// delete event's msgid among its tags).
func (p *plane) deletion(key ed25519.PrivateKey, senderDID, root string) eventstore.Deletion {
	eventID := ulid.Make().String()
	v, _ := signing.ChannelVenue("#c")
	doc, _ := signing.Mutation{Envelope: signing.Envelope{From: senderDID, MsgID: eventID, Venue: v}, Kind: signing.KindDelete, Subject: root}.Canonical()
	return eventstore.Deletion{Seq: 1, RootMsgID: root, At: *p.now, Venue: "#c", Deleter: eventstore.Deleter{Sender: "mallory!u@a.example",
		SenderDID: senderDID, Tags: map[string]string{"+draft/delete": root, "+freeq.at/sig": signing.Sign(key, doc), deletionEventIDTag: eventID}}}
}

func (p *plane) stored(t *testing.T, msgid string) (eventstore.Message, bool) {
	t.Helper()
	m, err := p.store.Get(context.Background(), msgid)
	if errors.Is(err, eventstore.ErrNotFound) {
		return m, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return m, true
}

func TestDueFollowsLinksOriginAndWindow(t *testing.T) {
	p := newPlane(t)
	now := *p.now
	msg := func(mutate func(*eventstore.Message)) eventstore.Message {
		m := eventstore.Message{Venue: "#c", Command: "PRIVMSG", SenderDID: planeBob, Time: now}
		mutate(&m)
		return m
	}
	tests := []struct {
		name string
		m    eventstore.Message
		want bool
	}{
		{"linked channel", msg(func(*eventstore.Message) {}), true},
		{"at the edge of the window", msg(func(m *eventstore.Message) { m.Time = now.Add(-24 * time.Hour) }), true},
		{"older than the window", msg(func(m *eventstore.Message) { m.Time = now.Add(-25 * time.Hour) }), false},
		{"channel linked with another peer", msg(func(m *eventstore.Message) { m.Venue = "#r" }), false},
		{"unlinked channel", msg(func(m *eventstore.Message) { m.Venue = "#other" }), false},
		{"relayed from a peer", msg(func(m *eventstore.Message) { m.Tags = map[string]string{TagOrigin: "a.example"} }), false},
		{"a TAGMSG", msg(func(m *eventstore.Message) { m.Command = "TAGMSG" }), false},
		{"a DM with no user of the peer present", msg(func(m *eventstore.Message) { m.Venue = "dm:" + planeBob + "," + planeRemote }), false},
	}
	for _, tt := range tests {
		if got := p.f.DueMessage(p.full.DID, tt.m); got != tt.want {
			t.Errorf("DueMessage: %s = %v, want %v", tt.name, got, tt.want)
		}
		d := eventstore.Deletion{Venue: tt.m.Venue, At: tt.m.Time, Deleter: eventstore.Deleter{SenderDID: tt.m.SenderDID, Tags: tt.m.Tags}}
		if want := tt.want || tt.m.Command == "TAGMSG"; p.f.DueDeletion(p.full.DID, d) != want {
			t.Errorf("DueDeletion: %s = %v, want %v", tt.name, !want, want)
		}
		r := eventstore.ReactionEvent{Venue: tt.m.Venue, At: tt.m.Time, SenderDID: tt.m.SenderDID, Tags: tt.m.Tags}
		if want := tt.want || (tt.m.Command == "TAGMSG"); p.f.DueReaction(p.full.DID, r) != want {
			t.Errorf("DueReaction: %s = %v, want %v", tt.name, !want, want)
		}
	}
	if p.f.DueReaction(p.full.DID, eventstore.ReactionEvent{Venue: "#c", At: now}) {
		t.Error("a reaction of no authenticated user is due")
	}
	routes := p.f.Routes()
	if len(routes) != 3 || routes[0].DID != p.full.DID || routes[0].StreamURL != p.full.BaseURL+StreamPath || routes[0].Client != http.DefaultClient {
		t.Errorf("Routes = %+v", routes)
	}
}

// streamRequest is a stream request signed by key for signer, dated at.
func streamRequest(signer string, key ed25519.PrivateKey, at time.Time, input string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, StreamPath, nil)
	date := strconv.FormatInt(at.Unix(), 10)
	if input == "" {
		input = "GET\n" + StreamPath + "\n" + date + "\n"
	}
	r.Header.Set("Palaver-Node", signer)
	r.Header.Set("Palaver-Date", date)
	r.Header.Set("Palaver-Signature", signing.FormatSigTag(signing.KID(key.Public().(ed25519.PublicKey)), ed25519.Sign(key, []byte(input))))
	return r
}

func TestAuthenticateStream(t *testing.T) {
	p := newPlane(t)
	_, stranger, _ := ed25519.GenerateKey(rand.Reader)
	tests := []struct {
		name   string
		r      *http.Request
		status int
	}{
		{"unknown signer", streamRequest("did:web:stranger.example", stranger, *p.now, ""), http.StatusForbidden},
		{"readonly peer", streamRequest(p.ro.DID, p.roKey, *p.now, ""), http.StatusForbidden},
		{"kid not in the peer's document", streamRequest(p.full.DID, stranger, *p.now, ""), http.StatusUnauthorized},
		{"signature over something else", streamRequest(p.full.DID, p.fullKey, *p.now, "GET\n/internal/v1/stream\n1\n"), http.StatusUnauthorized},
		{"stale", streamRequest(p.full.DID, p.fullKey, p.now.Add(-10*time.Minute), ""), http.StatusUnauthorized},
		{"unsigned", httptest.NewRequest(http.MethodGet, StreamPath, nil), http.StatusUnauthorized},
		{"relay peer", streamRequest(p.relay.DID, p.relayKey, *p.now, ""), http.StatusOK},
		{"full peer", streamRequest(p.full.DID, p.fullKey, *p.now, ""), http.StatusOK},
	}
	for _, tt := range tests {
		server, pub, status, err := p.f.AuthenticateStream(tt.r)
		if status != tt.status || (status == http.StatusOK) != (err == nil) {
			t.Errorf("%s: status %d (%v), want %d", tt.name, status, err, tt.status)
			continue
		}
		if status == http.StatusOK && (server != tt.r.Header.Get("Palaver-Node") || pub == nil) {
			t.Errorf("%s: authenticated as %q with key %v", tt.name, server, pub)
		}
		if status != http.StatusOK && (server != "" || pub != nil) {
			t.Errorf("%s: refused, yet named %q", tt.name, server)
		}
	}
}

// TestReceiveFrameDropsLies: each lie a peer can put in a stream frame is dropped (taken, so the
// sender moves on, and nothing stored); honest items are stored with the origin tag.
func TestReceiveFrameDropsLies(t *testing.T) {
	p := newPlane(t)
	ctx := context.Background()
	forged := p.event(p.fullKey, "#c", planeRemote, "mallory", "forged")
	forged.Tags["+freeq.at/sig"] = forged.Tags["+freeq.at/sig"][:len(forged.Tags["+freeq.at/sig"])-4] + "AAAA"
	edit := p.event(p.fullKey, "#c", planeRemote, "mallory", "rewritten")
	edit.ReplacesMsgID = p.victimMsg
	editAsBob := p.event(p.fullKey, "#c", planeBob, "mallory", "rewritten")
	editAsBob.ReplacesMsgID = p.victimMsg
	dm := p.event(p.fullKey, "dm:"+planeBob+","+planeRemote, planeBob, "mallory", "a DM as bob")
	tests := []struct {
		name   string
		server string
		frame  exchange.ServerFrame
	}{
		{"forged signature", p.full.DID, exchange.ServerFrame{Events: []exchange.Event{forged}}},
		{"a local user's DID", p.full.DID, exchange.ServerFrame{Events: []exchange.Event{p.event(p.fullKey, "#c", planeBob, "notbob", "I am bob")}}},
		{"a local nick", p.full.DID, exchange.ServerFrame{Events: []exchange.Event{p.event(p.fullKey, "#c", planeRemote, "BOB", "I am bob too")}}},
		{"edit of the victim's message", p.full.DID, exchange.ServerFrame{Events: []exchange.Event{edit}}},
		{"edit as the victim", p.full.DID, exchange.ServerFrame{Events: []exchange.Event{editAsBob}}},
		{"a DM sent as a local user", p.full.DID, exchange.ServerFrame{Events: []exchange.Event{dm}}},
		{"an unlinked channel", p.full.DID, exchange.ServerFrame{Events: []exchange.Event{p.event(p.fullKey, "#other", planeRemote, "mallory", "elsewhere")}}},
		{"a relay peer in another peer's channel", p.relay.DID, exchange.ServerFrame{Events: []exchange.Event{p.event(p.relayKey, "#c", "did:web:eve.relay.example", "eve", "not my link")}}},
		{"delete of the victim's message", p.full.DID, exchange.ServerFrame{Deletions: []eventstore.Deletion{p.deletion(p.fullKey, planeRemote, p.victimMsg)}}},
	}
	for _, tt := range tests {
		taken, err := p.f.ReceiveFrame(ctx, tt.server, tt.frame)
		want := exchange.Taken{Events: len(tt.frame.Events), Deletions: len(tt.frame.Deletions)}
		if err != nil || taken != want {
			t.Errorf("%s: taken %+v, %v; want %+v", tt.name, taken, err, want)
		}
		for _, e := range tt.frame.Events {
			if _, ok := p.stored(t, e.MsgID); ok {
				t.Errorf("%s: %q was stored", tt.name, e.Text)
			}
		}
	}
	if m, ok := p.stored(t, p.victimMsg); !ok || m.Text != "the victim's message" || !m.DeletedAt.IsZero() {
		t.Errorf("the victim's message changed: %+v", m)
	}

	// A readonly peer may originate nothing: its frame ends its stream, nothing stored.
	ro := p.event(p.roKey, "#ro", "did:web:r.ro.example", "r", "from readonly")
	if _, err := p.f.ReceiveFrame(ctx, p.ro.DID, exchange.ServerFrame{Events: []exchange.Event{ro}}); !errors.Is(err, errReadonly) {
		t.Errorf("readonly frame: %v", err)
	}
	if _, ok := p.stored(t, ro.MsgID); ok {
		t.Error("a readonly peer's message was stored")
	}
	if _, err := p.f.ReceiveFrame(ctx, "did:web:stranger.example", exchange.ServerFrame{Events: []exchange.Event{ro}}); err == nil {
		t.Error("a frame of an unconfigured server was applied")
	}

	// Honest items are stored with the origin tag; an edit whose root is not here waits, and
	// stops its list there.
	honest := p.event(p.fullKey, "#c", planeRemote, "mal\r\nlory", "hello")
	waiting := p.event(p.fullKey, "#c", planeRemote, "mallory", "an edit of a message not here yet")
	waiting.ReplacesMsgID = ulid.Make().String()
	after := p.event(p.fullKey, "#c", planeRemote, "mallory", "after the wait")
	relayed := p.event(p.relayKey, "#r", "did:web:eve.relay.example", "eve", "from the relay")
	taken, err := p.f.ReceiveFrame(ctx, p.full.DID, exchange.ServerFrame{Events: []exchange.Event{honest, waiting, after}})
	if err != nil || taken != (exchange.Taken{Events: 1}) {
		t.Fatalf("honest frame: taken %+v, %v", taken, err)
	}
	if _, err := p.f.ReceiveFrame(ctx, p.relay.DID, exchange.ServerFrame{Events: []exchange.Event{relayed}}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []exchange.Event{honest, relayed} {
		m, ok := p.stored(t, e.MsgID)
		if !ok || m.Tags[TagOrigin] != ServerName(map[string]string{honest.MsgID: p.full.DID, relayed.MsgID: p.relay.DID}[e.MsgID]) {
			t.Errorf("%q: stored %v as %+v", e.Text, ok, m)
		}
	}
	if m, _ := p.stored(t, honest.MsgID); m.SenderNick != "mallory" {
		t.Errorf("nick not sanitised: %q", m.SenderNick)
	}
	for _, e := range []exchange.Event{waiting, after} {
		if _, ok := p.stored(t, e.MsgID); ok {
			t.Errorf("%q stored past an item that waits", e.Text)
		}
	}
}

// TestReceiveFramePaces: a peer's 101st item within a second waits for the rate limit before
// anything of its frame is stored; the wait is the limiter's, not a refusal.
func TestReceiveFramePaces(t *testing.T) {
	p := newPlane(t)
	ctx := context.Background()
	flood := exchange.ServerFrame{}
	for range MaxBatchItems {
		flood.Events = append(flood.Events, p.event(p.fullKey, "#other", planeRemote, "mallory", "flood"))
	}
	if taken, err := p.f.ReceiveFrame(ctx, p.full.DID, flood); err != nil || taken.Events != MaxBatchItems {
		t.Fatalf("the first 100 items: taken %+v, %v", taken, err)
	}
	next := p.event(p.fullKey, "#c", planeRemote, "mallory", "the 101st")
	var waited []time.Duration
	p.f.sleep = func(_ context.Context, d time.Duration) error {
		if _, ok := p.stored(t, next.MsgID); ok {
			t.Error("the 101st item was stored before its wait")
		}
		waited = append(waited, d)
		*p.now = p.now.Add(d)
		return nil
	}
	if taken, err := p.f.ReceiveFrame(ctx, p.full.DID, exchange.ServerFrame{Events: []exchange.Event{next}}); err != nil || taken.Events != 1 {
		t.Fatalf("the 101st item: taken %+v, %v", taken, err)
	}
	if len(waited) != 1 || waited[0] < 9*time.Millisecond || waited[0] > 11*time.Millisecond {
		t.Fatalf("waits %v, want one of 10 ms (1/100 s)", waited)
	}
	if _, ok := p.stored(t, next.MsgID); !ok {
		t.Fatal("the 101st item was not stored after its wait")
	}
	// The other peer's budget is its own.
	p.f.sleep = func(context.Context, time.Duration) error {
		t.Error("another peer's frame waited")
		return nil
	}
	if _, err := p.f.ReceiveFrame(ctx, p.relay.DID, exchange.ServerFrame{Events: []exchange.Event{p.event(p.relayKey, "#r", "did:web:eve.relay.example", "eve", "hi")}}); err != nil {
		t.Fatal(err)
	}
	// A wait that is cut short (the stream ends) ends the frame: nothing stored, tokens back.
	cancelled := p.event(p.fullKey, "#c", planeRemote, "mallory", "never")
	p.f.sleep = func(context.Context, time.Duration) error { return context.Canceled }
	if _, err := p.f.ReceiveFrame(ctx, p.full.DID, exchange.ServerFrame{Events: []exchange.Event{cancelled}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait: %v", err)
	}
	if _, ok := p.stored(t, cancelled.MsgID); ok {
		t.Fatal("stored after a cancelled wait")
	}
	// A frame larger than the limit's burst is never let in.
	big := exchange.ServerFrame{Events: append(flood.Events[:MaxBatchItems:MaxBatchItems], next)}
	if _, err := p.f.ReceiveFrame(ctx, p.full.DID, big); err == nil {
		t.Fatal("a frame of 101 items was applied")
	}
}

// TestOutboxFollowsTheStream: the envelope outbox sends nothing until the stream comes up, then
// the link-up snapshot (asking for the peer's members); after that only what is queued. When the
// stream drops, a request to the home is refused at once, and the next link up sends the
// snapshot again.
func TestOutboxFollowsTheStream(t *testing.T) {
	batches := make(chan Batch, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, payload, _, err := ParseEnvelope(body)
		b, err2 := DecodeBatch(payload)
		if r.URL.Path != "/federation/v1/events" || err != nil || err2 != nil {
			http.Error(w, "bad envelope", http.StatusBadRequest)
			return
		}
		batches <- b
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(srv.Close)
	fx := fsm.NewFixture()
	fx.AddSession(fsm.Session{ID: "s-bob", Nick: "bob", User: "bob", DID: planeBob})
	fx.AddChannel(fsm.Channel{Name: "#c"})
	fx.AddMember("#c", "s-bob", fsm.Member{})
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	home := "did:web:a.example" // sorts first: the home, so this side sends no topics
	prop := &clearCounter{}
	f, err := New(Config{SendEvery: time.Second, CatchUpWindow: 24 * time.Hour, ServerDID: "did:web:b.example", NodeName: "n1", Key: key, Client: srv.Client(),
		Peers: []Peer{{DID: home, BaseURL: srv.URL, Trust: TrustFull}}, Links: []Link{{Channel: "#c", Peer: home}},
		State: fixedState{fx.State()}, Proposer: prop, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	f.Start()
	t.Cleanup(f.Close)
	next := func(what string) Batch {
		t.Helper()
		select {
		case b := <-batches:
			return b
		case <-time.After(10 * time.Second):
			t.Fatalf("no envelope: %s", what)
		}
		return Batch{}
	}
	if n := len(batches); n != 0 {
		t.Fatalf("%d envelopes before the stream came up", n)
	}
	f.StreamUp(home)
	if b := next("the link-up snapshot"); !b.WantPresence || len(b.Presence) != 1 || b.Presence[0].Kind != PresenceMembers ||
		len(b.Presence[0].Members) != 1 || b.Presence[0].Members[0].Nick != "bob" {
		t.Fatalf("link-up envelope = %+v", b)
	}
	f.queuePresence(home, Presence{Kind: PresencePart, Channel: "#c", Nick: "bob", User: "bob", DID: planeBob})
	if b := next("the queued part"); b.WantPresence || len(b.Presence) != 1 || b.Presence[0].Kind != PresencePart {
		t.Fatalf("queued envelope = %+v", b)
	}

	f.StreamDown(home, errors.New("connection reset"))
	f.StreamDown(home, errors.New("connection refused")) // a reconnect that failed: the same outage
	if n := prop.clears.Load(); n != 1 {
		t.Fatalf("the peer's members were forgotten %d times in one outage", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = f.RequestChange(ctx, Change{Kind: ChangeMode, Channel: "#c", Actor: "bob!bob@h", ActorDID: planeBob,
		Modes: []ModeChange{{Add: true, Mode: "m"}}})
	if !errors.Is(err, ErrLinkDown) {
		t.Fatalf("a request while the stream is down: %v", err)
	}
	f.StreamUp(home)
	if b := next("the snapshot after the link came back"); !b.WantPresence || len(b.Presence) != 1 || b.Presence[0].Kind != PresenceMembers {
		t.Fatalf("envelope after the link came back = %+v", b)
	}
	if n := len(batches); n != 0 {
		t.Fatalf("%d more envelopes with nothing queued", n)
	}
	f.StreamDown(home, nil)
	if n := prop.clears.Load(); n != 2 {
		t.Fatalf("the peer's members were forgotten %d times in two outages", n)
	}
}

// clearCounter is a proposer that counts the RemoteClear commands proposed.
type clearCounter struct{ clears atomic.Int32 }

func (c *clearCounter) Propose(_ context.Context, cmd fsm.Command) (fsm.Result, error) {
	if p, ok := cmd.(fsm.RemotePresence); ok && p.Op == fsm.RemoteClear {
		c.clears.Add(1)
	}
	return fsm.Result{Code: fsm.OK}, nil
}
