package irc

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/node/stream"
	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

func quietServer(t *testing.T, cfg Config, state State, h storeHistory) *Server {
	t.Helper()
	unit := unitConfig(256 << 10)
	cfg.ServerName = unit.ServerName
	cfg.NodeName = "n1"
	cfg.Logger = unit.Logger
	cfg.SendQBytes, cfg.PingAfter, cfg.PingTimeout, cfg.KeySweepEvery = unit.SendQBytes, unit.PingAfter, unit.PingTimeout, unit.KeySweepEvery
	if cfg.Messages == nil {
		cfg.Messages = testMessages(cfg, state, h, nil)
	}
	s := New(cfg, state, nil, h, nil)
	t.Cleanup(s.Close)
	return s
}

// testMessages is the chat service of an edge under test, signing with key.
func testMessages(cfg Config, state State, h storeHistory, key ed25519.PrivateKey) *chat.Service {
	var stored chat.Publisher
	if cfg.Streams != nil {
		stored = cfg.Streams.Stored
	}
	return chat.New(chat.Config{State: state, Store: h, Key: key, Stored: stored, NodeName: "n1", Logger: cfg.Logger})
}

// addClient registers a local session with the given capabilities, in the state too.
func addClient(t *testing.T, s *Server, state *fsmtest.Machine, nick string, caps capBits) (*client, *recordConn) {
	conn := &recordConn{}
	c := s.newClient(conn)
	c.nick, c.user = nick, "u"
	c.caps.Store(uint32(caps))
	c.registered.Store(true)
	s.mu.Lock()
	s.addClient(c)
	s.mu.Unlock()
	if state != nil {
		state.MustOK(t, fsmtest.Session(c.id, nick, ""))
	}
	return c, conn
}

func joinState(t *testing.T, state *fsmtest.Machine, channel string, cs ...*client) {
	for _, c := range cs {
		state.MustOK(t, fsm.Join{Session: c.id, Channel: channel})
	}
}

func parse(t *testing.T, line string) ircmsg.Message {
	t.Helper()
	m, err := ircmsg.Parse(line)
	if err != nil {
		t.Fatalf("parse %q: %v", line, err)
	}
	return m
}

func TestRegisterVerbRefusals(t *testing.T) {
	s := quietServer(t, Config{}, nil, nil)
	ok := func(*VerbContext) {}
	if err := s.RegisterVerb("AGENT", 1, ok); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		verb string
		min  int
		fn   VerbFunc
	}{
		{"lower case", "agent", 0, ok},
		{"empty", "", 0, ok},
		{"space", "AG ENT", 0, ok},
		{"built-in", "JOIN", 0, ok},
		{"twice", "AGENT", 0, ok},
		{"nil function", "PRESENCE", 0, nil},
		{"negative parameters", "PRESENCE", -1, ok},
	} {
		if err := s.RegisterVerb(tc.verb, tc.min, tc.fn); err == nil {
			t.Errorf("%s: RegisterVerb(%q) accepted", tc.name, tc.verb)
		}
	}
	s.startServing()
	if err := s.RegisterVerb("HEARTBEAT", 0, ok); !errors.Is(err, ErrServing) {
		t.Errorf("RegisterVerb while serving: %v, want ErrServing", err)
	}
	if err := s.AddMessageCheck("late", func(OutgoingMessage) *Refusal { return nil }); !errors.Is(err, ErrServing) {
		t.Errorf("AddMessageCheck while serving: %v, want ErrServing", err)
	}
	if err := s.AddJoinTags(func(string, string, string) map[string]string { return nil }); !errors.Is(err, ErrServing) {
		t.Errorf("AddJoinTags while serving: %v, want ErrServing", err)
	}
}

// A registered verb is dispatched like a built-in one: 451 before registration, 461 below its
// parameters, otherwise its function, which sees the sender and answers through the context.
func TestRegisteredVerbIsDispatched(t *testing.T) {
	s := quietServer(t, Config{}, nil, nil)
	var mu sync.Mutex
	var seen []string
	if err := s.RegisterVerb("PROVENANCE", 1, func(v *VerbContext) {
		mu.Lock()
		seen = append(seen, v.SessionID(), v.Nick(), strings.Join(v.Caps(), ","), v.Msg.Param(0))
		mu.Unlock()
		if !v.Has("message-tags") {
			v.Fail("PROVENANCE", "NEED_TAGS", "message-tags is required", v.Msg.Param(0))
			return
		}
		v.Numeric("RPL_X", v.Msg.Param(0), "known")
		v.Reply(ircmsg.Message{Command: "NOTE", Params: []string{"PROVENANCE", "OK", "done"}})
	}); err != nil {
		t.Fatal(err)
	}
	tagged, taggedConn := addClient(t, s, nil, "alice", capMessageTags|capServerTime)
	plain, plainConn := addClient(t, s, nil, "bob", 0)
	unreg, unregConn := addClient(t, s, nil, "carol", 0)
	unreg.registered.Store(false)

	tagged.dispatch(parse(t, "PROVENANCE"))
	tagged.dispatch(parse(t, "PROVENANCE did:plc:x"))
	plain.dispatch(parse(t, "PROVENANCE did:plc:y"))
	unreg.dispatch(parse(t, "PROVENANCE did:plc:z"))

	want := []struct {
		conn *recordConn
		n    int
		has  []string
	}{
		{taggedConn, 3, []string{" 461 alice PROVENANCE ", " RPL_X alice did:plc:x known", ":irc.test NOTE PROVENANCE OK done"}},
		{plainConn, 1, []string{" FAIL PROVENANCE NEED_TAGS did:plc:y :message-tags is required"}},
		{unregConn, 1, []string{" 451 "}},
	}
	for i, w := range want {
		lines := waitLines(t, w.conn, w.n)
		joined := strings.Join(lines, "\n")
		for _, h := range w.has {
			if !strings.Contains(joined, h) {
				t.Errorf("client %d: lines %q lack %q", i, lines, h)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	wantSeen := []string{tagged.id, "alice", "message-tags,server-time", "did:plc:x", plain.id, "bob", "", "did:plc:y"}
	if !slices.Equal(seen, wantSeen) {
		t.Errorf("verb saw %q, want %q", seen, wantSeen)
	}
}

// A message check sees the outgoing channel message and may refuse it with a FAIL; a refused
// message is neither stored nor delivered, and the first refusal wins.
func TestMessageCheckRefuses(t *testing.T) {
	state := fsmtest.New()
	h := &fakeHistory{}
	s := quietServer(t, Config{}, state, h)
	var got []OutgoingMessage
	var mu sync.Mutex
	if err := s.AddMessageCheck("act", func(m OutgoingMessage) *Refusal {
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
		if _, ok := m.Tags["+freeq.at/act"]; ok && m.Command == "TAGMSG" {
			return &Refusal{Code: "INVALID_ACT", Text: "no such act"}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddMessageCheck("act", func(OutgoingMessage) *Refusal { return nil }); err == nil {
		t.Error("a second check of the same name was accepted")
	}
	if err := s.AddMessageCheck("words", func(m OutgoingMessage) *Refusal {
		if strings.Contains(m.Text, "forbidden") {
			return &Refusal{Code: "bad code", Text: "not here"}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	alice, _ := addClient(t, s, state, "alice", capMessageTags)
	bob, bobConn := addClient(t, s, state, "bob", capMessageTags)
	joinState(t, state, "#c", alice, bob)

	for _, tc := range []struct {
		cmd, text string
		tags      map[string]string
		fail      string // "" when the message passes
	}{
		{"TAGMSG", "", map[string]string{"+freeq.at/act": "x"}, "FAIL TAGMSG INVALID_ACT #c :no such act"},
		{"PRIVMSG", "forbidden words", nil, "FAIL PRIVMSG REFUSED #c :not here"},
		{"PRIVMSG", "hello", map[string]string{"+freeq.at/act": "x"}, ""},
	} {
		rb := &respBuf{c: alice}
		step := alice.channelMessage(tc.cmd, "", "#c", tc.text, tc.tags, rb)
		var lines []string
		for _, m := range rb.msgs {
			lines = append(lines, string(m.AppendTo(nil)))
		}
		if tc.fail != "" {
			if step != nil || len(lines) != 1 || !strings.Contains(lines[0], tc.fail) {
				t.Errorf("%s %q: step %v, replies %q, want %q", tc.cmd, tc.text, step != nil, lines, tc.fail)
			}
			continue
		}
		if step == nil {
			t.Fatalf("%s %q refused: %q", tc.cmd, tc.text, lines)
		}
		alice.completeNow(rb, step)
	}
	if stored := h.stored(); len(stored) != 1 {
		t.Errorf("stored %v, want only the message that passed", stored)
	}
	lines := waitLines(t, bobConn, 1)
	if len(lines) != 1 || !strings.Contains(lines[0], "PRIVMSG #c :hello") {
		t.Errorf("bob got %q, want only the message that passed", lines)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || got[0].SessionID != alice.id || got[0].Channel != "#c" || got[0].Nick != "alice" || got[2].Text != "hello" {
		t.Errorf("the check saw %+v", got)
	}
}

// Join tags are added to the JOIN rendered for members with message-tags only; tags that are
// not client-only are dropped.
func TestJoinTags(t *testing.T) {
	e := newRenderEnv(t, nil)
	if err := e.s.AddJoinTags(func(channel, session, did string) map[string]string {
		return map[string]string{"+freeq.at/actor-class": "agent:" + channel, "account": "forged"}
	}); err != nil {
		t.Fatal(err)
	}
	alice, _ := e.client("alice")
	bob, bobConn := e.client("bob")
	carol, carolConn := e.client("carol")
	bob.caps.Store(uint32(capMessageTags))
	e.s.Observe([]fsm.Event{e.applyJoin(bob, "#c"), e.applyJoin(carol, "#c"), e.applyJoin(alice, "#c")})
	aliceJoin := func(conn *recordConn) string {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			lines, _, _ := conn.snapshot()
			for _, l := range lines {
				if strings.Contains(l, ":alice!") && strings.Contains(l, " JOIN ") {
					return l
				}
			}
			time.Sleep(time.Millisecond)
		}
		t.Fatal("no JOIN of alice")
		return ""
	}
	// The join tags, and the msgid event playback keeps the JOIN under.
	if got := aliceJoin(bobConn); !strings.HasPrefix(got, "@+freeq.at/actor-class=agent:#c;msgid=") || !strings.Contains(got, " :alice!") {
		t.Errorf("bob (message-tags) got %q", got)
	}
	if got := aliceJoin(carolConn); strings.HasPrefix(got, "@") {
		t.Errorf("carol (no message-tags) got %q", got)
	}
}

// storedRecorder subscribes to a Stored stream and records what it gets.
type storedRecorder struct {
	mu    sync.Mutex
	items []stream.Item
}

func (r *storedRecorder) fn(it stream.Item) {
	r.mu.Lock()
	r.items = append(r.items, it)
	r.mu.Unlock()
}

func TestSendServerMessage(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	state := fsmtest.New()
	h := &fakeHistory{}
	streams := &stream.Streams{Applied: stream.NewApplied(stream.AppliedOptions{}), Stored: stream.NewStored(stream.StoredOptions{})}
	t.Cleanup(streams.Close)
	rec := &storedRecorder{}
	if err := streams.Stored.Subscribe("test", stream.Backpressure, rec.fn, stream.Local); err != nil {
		t.Fatal(err)
	}
	s := quietServer(t, Config{Messages: testMessages(Config{Streams: streams}, state, h, priv), Streams: streams}, state, h)
	alice, aliceConn := addClient(t, s, state, "alice", capMessageTags)
	bob, bobConn := addClient(t, s, state, "bob", 0)
	joinState(t, state, "#c", alice, bob)
	ctx := context.Background()

	for _, tc := range []struct {
		name string
		m    ServerMessage
	}{
		{"not a channel", ServerMessage{Channel: "alice", Command: "TAGMSG", Tags: map[string]string{"+a": "1"}}},
		{"no such channel", ServerMessage{Channel: "#none", Command: "TAGMSG"}},
		{"PRIVMSG", ServerMessage{Channel: "#c", Command: "PRIVMSG", Text: "x", Store: true}},
		{"TAGMSG with text", ServerMessage{Channel: "#c", Command: "TAGMSG", Text: "x"}},
		{"live NOTICE", ServerMessage{Channel: "#c", Command: "NOTICE", Text: "x"}},
		{"empty NOTICE", ServerMessage{Channel: "#c", Command: "NOTICE", Store: true}},
		{"two-line NOTICE", ServerMessage{Channel: "#c", Command: "NOTICE", Text: "a\r\nQUIT", Store: true}},
		{"server tag", ServerMessage{Channel: "#c", Command: "TAGMSG", Tags: map[string]string{"account": "x"}}},
		{"own signature", ServerMessage{Channel: "#c", Command: "TAGMSG", Tags: map[string]string{tagSig: "x"}}},
		{"oversized tags", ServerMessage{Channel: "#c", Command: "TAGMSG", Tags: map[string]string{"+big": strings.Repeat("x", 5000)}}},
	} {
		if _, err := s.SendServerMessage(ctx, tc.m); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if len(h.stored()) != 0 {
		t.Fatalf("refused server messages stored %v", h.stored())
	}

	live, err := s.SendServerMessage(ctx, ServerMessage{Channel: "#C", Command: "TAGMSG", Tags: map[string]string{"+freeq.at/av-state": "started"}})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := s.SendServerMessage(ctx, ServerMessage{Channel: "#c", Command: "NOTICE", Text: "call ended", Store: true,
		Tags: map[string]string{"+freeq.at/av-state": "ended"}})
	if err != nil {
		t.Fatal(err)
	}
	lines := waitLines(t, aliceConn, 2)
	m := parse(t, lines[0])
	if m.Command != "TAGMSG" || m.Source != "irc.test" || m.Tags["msgid"] != live || m.Tags["+freeq.at/av-state"] != "started" {
		t.Errorf("alice got %q", lines[0])
	}
	if _, signed := m.Tags[tagSig]; signed {
		t.Errorf("an AV TAGMSG (no signed document) carries a signature: %q", lines[0])
	}
	n := parse(t, lines[1])
	if n.Command != "NOTICE" || n.Tags["msgid"] != stored || n.Param(1) != "call ended" || n.Source != "irc.test" {
		t.Errorf("alice got %q", lines[1])
	}
	// The NOTICE's signature verifies against this node's server key, as the server DID's.
	venue, _ := signing.ChannelVenue("#c")
	doc, err := signing.DocumentFromTags("NOTICE", signing.Envelope{From: "did:web:n1", MsgID: stored, Venue: venue}, "call ended",
		map[string]string{"+freeq.at/av-state": "ended"})
	if err != nil {
		t.Fatal(err)
	}
	canonical, _ := doc.Canonical()
	lookup := func(kid string) (ed25519.PublicKey, bool) { return pub, kid == signing.KID(pub) }
	if v, why := signing.Verify(canonical, n.Tags[tagSig], lookup); v != signing.Valid {
		t.Errorf("server NOTICE signature: %v (%s)", v, why)
	}
	bobLines := waitLines(t, bobConn, 1)
	if len(bobLines) != 1 || !strings.Contains(bobLines[0], "NOTICE #c :call ended") {
		t.Errorf("bob (no message-tags) got %q, want the NOTICE only", bobLines)
	}
	if got := h.stored(); !slices.Equal(got, []string{stored}) {
		t.Errorf("stored %v, want the NOTICE only", got)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := streams.Stored.Sync(sctx); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.items) != 2 || rec.items[0].Kind != stream.KindEphemeral || rec.items[1].Kind != stream.KindMessage ||
		rec.items[1].Message.MsgID != stored || rec.items[0].Message.SenderDID != "did:web:n1" {
		t.Errorf("published %+v, want the live TAGMSG then the stored NOTICE", rec.items)
	}
}

// RateLimited reads a session's message budget without spending it.
func TestRateLimitedPeeks(t *testing.T) {
	s := quietServer(t, Config{FloodLimits: true}, nil, nil)
	c, _ := addClient(t, s, nil, "alice", 0)
	if s.RateLimited(c.id) || s.RateLimited("nobody") {
		t.Fatal("a fresh session (or none) is rate limited")
	}
	for range 20 { // peeking spends nothing
		if s.RateLimited(c.id) {
			t.Fatal("peeking spent the budget")
		}
	}
	now := time.Now()
	for c.flood.allowMessage(now) {
	}
	if !s.RateLimited(c.id) {
		t.Error("a spent budget is not reported")
	}
}
