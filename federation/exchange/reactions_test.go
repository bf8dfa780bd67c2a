package exchange

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/limits"
)

// recorder collects what an exchange delivered.
type recorder struct {
	n         *testNode
	mu        sync.Mutex
	reactions []string // event ids
	ephemeral []string // msgids
}

func (r *recorder) reaction(ev eventstore.ReactionEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reactions = append(r.reactions, ev.EventID)
}

func (r *recorder) typing(m eventstore.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ephemeral = append(r.ephemeral, m.MsgID)
}

func (r *recorder) reactionsSeen() []string {
	r.n.sync()
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reactions)
}

func (r *recorder) ephemeralSeen() []string {
	r.n.sync()
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ephemeral)
}

func (n *testNode) record() *recorder {
	r := &recorder{n: n}
	n.mu.Lock()
	n.rec = r
	n.mu.Unlock()
	return r
}

// react files a reaction made on n and publishes it.
func (n *testNode) react(t *testing.T, root, emoji string, remove bool) string {
	t.Helper()
	ev := eventstore.ReactionEvent{EventID: ulid.Make().String(), Origin: Name(n.did), Root: root, Reactor: "did:plc:r",
		ReactorNick: "r", Emoji: emoji, Remove: remove, At: time.Now(), Venue: "#x", Sender: "r!u@h", SenderDID: "did:plc:r",
		Tags: map[string]string{"+react": emoji, "+reply": root}}
	if _, err := n.store.FileReaction(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	n.x.PublishReaction(ev)
	return ev.EventID
}

func tally(t *testing.T, n *testNode, root, emoji string) int {
	t.Helper()
	got, err := n.store.Reactions(context.Background(), []string{root})
	if err != nil {
		t.Fatal(err)
	}
	return got[root][emoji]
}

func TestReactionsArePushedAndPulledOnce(t *testing.T) {
	c := newCluster(t, "a", "b")
	a, b := c.nodes["did:web:a"], c.nodes["did:web:b"]
	seen := b.record()
	root := a.say(t, "react to me")
	waitFor(t, "the message on b", func() bool { return b.count(root) == 1 })
	react := a.react(t, root, "👍", false)
	waitFor(t, "the pushed reaction", func() bool { return len(seen.reactionsSeen()) == 1 })
	if tally(t, b, root, "👍") != 1 {
		t.Fatal("b delivered the reaction but does not count it")
	}
	b.x.PullAll(context.Background()) // the pull finds it filed: no second delivery
	if got := seen.reactionsSeen(); !slices.Equal(got, []string{react}) {
		t.Fatalf("delivered %v, want once %s", got, react)
	}
	if n, _ := ReadCursor(context.Background(), b.store, inCursor("a", LogReactions)); n == 0 {
		t.Fatal("the pull did not move b's reaction cursor")
	}
	unreact := a.react(t, root, "👍", true)
	waitFor(t, "the pushed unreact", func() bool { return len(seen.reactionsSeen()) == 2 })
	if tally(t, b, root, "👍") != 0 || seen.reactionsSeen()[1] != unreact {
		t.Fatal("the unreact did not apply on b")
	}
}

func TestReactionsWaitForTheirMessage(t *testing.T) {
	c := newCluster(t, "a", "b", "c")
	a, b, cc := c.nodes["did:web:a"], c.nodes["did:web:b"], c.nodes["did:web:c"]
	seen := cc.record()
	ctx := context.Background()
	// a stores a message without pushing it; b copies it by pulling; c does not have it.
	m0 := &eventstore.Message{MsgID: ulid.Make().String(), Venue: "#x", Command: "PRIVMSG", Sender: "a!u@h",
		SenderNick: "a", Text: "hello", Time: time.Now(), Origin: "a"}
	if err := a.store.Append(ctx, m0); err != nil {
		t.Fatal(err)
	}
	if err := b.x.pull(ctx, Peer{DID: a.did, BaseURL: a.srv.URL}, allLogs); err != nil {
		t.Fatal(err)
	}
	cc.down.Store(true) // c misses the push
	b.react(t, m0.MsgID, "🎉", false)
	cc.down.Store(false)
	if err := cc.x.pull(ctx, Peer{DID: b.did, BaseURL: b.srv.URL}, allLogs); err != nil {
		t.Fatal(err)
	}
	if n, _ := ReadCursor(ctx, cc.store, inCursor("b", LogReactions)); n != 0 || len(seen.reactionsSeen()) != 0 {
		t.Fatalf("reaction applied or skipped before its message arrived (cursor %d)", n)
	}
	cc.x.PullAll(ctx) // from a (the message) and b (the reaction), in either order
	cc.x.PullAll(ctx)
	if tally(t, cc, m0.MsgID, "🎉") != 1 || len(seen.reactionsSeen()) != 1 {
		t.Fatalf("on c: tally %d, delivered %v", tally(t, cc, m0.MsgID, "🎉"), seen.reactionsSeen())
	}
}

// TestApplyReactions drives the filing walk directly: what it files, delivers, and where the
// cursor may move.
func TestApplyReactions(t *testing.T) {
	good := func(seq int64, id, root, emoji string, remove bool) eventstore.ReactionEvent {
		return eventstore.ReactionEvent{Seq: seq, EventID: id, Root: root, Reactor: "did:plc:r", ReactorNick: "r", Emoji: emoji,
			Remove: remove, At: time.UnixMilli(1_700_000_000_000 + seq), Venue: "#x", Sender: "r!u@h"}
	}
	malformed := good(2, "bad", "root", "👍", false)
	malformed.Venue = "nowhere"
	tests := []struct {
		name        string
		in          []eventstore.ReactionEvent
		wantLast    int64
		wantDeliver []string
		wantTally   int
	}{
		{"in order", []eventstore.ReactionEvent{good(1, "e1", "root", "👍", false), good(2, "e2", "root", "🎉", false)}, 2, []string{"e1", "e2"}, 1},
		{"react then unreact", []eventstore.ReactionEvent{good(1, "e1", "root", "👍", false), good(2, "e2", "root", "👍", true)}, 2, []string{"e1", "e2"}, 0},
		{"the walk stops at a missing root", []eventstore.ReactionEvent{good(1, "e1", "root", "👍", false), good(2, "e2", "gone", "👍", false), good(3, "e3", "root", "🎉", false)}, 1, []string{"e1"}, 1},
		{"a malformed reaction is passed over", []eventstore.ReactionEvent{good(1, "e1", "root", "👍", false), malformed, good(3, "e3", "root", "🎉", false)}, 3, []string{"e1", "e3"}, 1},
		{"a repeat is not delivered again", []eventstore.ReactionEvent{good(1, "e1", "root", "👍", false), good(1, "e1", "root", "👍", false)}, 1, []string{"e1"}, 1},
		{"a reaction needs its seq", []eventstore.ReactionEvent{good(0, "e0", "root", "👍", false)}, 0, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, "a")
			n := c.nodes["did:web:a"]
			seen := n.record()
			root := &eventstore.Message{MsgID: "root", Venue: "#x", Command: "PRIVMSG", Sender: "a!u@h", SenderNick: "a",
				Text: "hi", Time: time.Now(), Origin: "o"}
			if err := n.store.Append(context.Background(), root); err != nil {
				t.Fatal(err)
			}
			last, err := n.x.applyReactions(context.Background(), "did:web:o", "o", tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if last != tt.wantLast {
				t.Errorf("last = %d, want %d", last, tt.wantLast)
			}
			if got := seen.reactionsSeen(); !slices.Equal(got, tt.wantDeliver) {
				t.Errorf("delivered %v, want %v", got, tt.wantDeliver)
			}
			if got := tally(t, n, "root", "👍"); got != tt.wantTally {
				t.Errorf("tally = %d, want %d", got, tt.wantTally)
			}
		})
	}
}

func TestEphemeralTagmsgsAreRelayedNotStored(t *testing.T) {
	c := newCluster(t, "a", "b")
	a, b := c.nodes["did:web:a"], c.nodes["did:web:b"]
	seen := b.record()
	typing := eventstore.Message{MsgID: ulid.Make().String(), Venue: "#x", Command: "TAGMSG", Sender: "a!u@h",
		SenderNick: "a", Tags: map[string]string{"+typing": "active"}, Time: time.Now(), Origin: "a"}
	a.x.Relay(typing)
	waitFor(t, "the relayed TAGMSG", func() bool { return len(seen.ephemeralSeen()) == 1 })
	if n, _ := b.store.Count(context.Background()); n != 0 {
		t.Fatalf("b stored %d ephemeral events", n)
	}
	b.x.PullAll(context.Background())
	if got := seen.ephemeralSeen(); !slices.Equal(got, []string{typing.MsgID}) {
		t.Fatalf("delivered %v", got)
	}
}

func TestValidateEphemeral(t *testing.T) {
	ok := Event{MsgID: "m", Venue: "#x", Command: "TAGMSG", Sender: "a!u@h", SenderNick: "a", TimeMS: 1}
	tests := []struct {
		name   string
		mutate func(*Event)
		valid  bool
	}{
		{"typing", func(*Event) {}, true},
		{"a PRIVMSG is not ephemeral", func(e *Event) { e.Command = "PRIVMSG" }, false},
		{"text", func(e *Event) { e.Text = "hi" }, false},
		{"a DM venue", func(e *Event) { e.Venue = "dm:a,b" }, false},
		{"no msgid", func(e *Event) { e.MsgID = "" }, false},
		{"long msgid", func(e *Event) { e.MsgID = strings.Repeat("m", 65) }, false},
		{"no time", func(e *Event) { e.TimeMS = 0 }, false},
		{"a status PRIVMSG", func(e *Event) { e.Command, e.Status, e.Text = "PRIVMSG", "@", "hi" }, true},
		{"a status NOTICE", func(e *Event) { e.Command, e.Status, e.Text = "NOTICE", "+", "hi" }, true},
		{"a status TAGMSG", func(e *Event) { e.Status = "%" }, true},
		{"a status TAGMSG with text", func(e *Event) { e.Status, e.Text = "%", "hi" }, false},
		{"an unknown status", func(e *Event) { e.Command, e.Status, e.Text = "PRIVMSG", "~", "hi" }, false},
		{"an oversized status message", func(e *Event) { e.Command, e.Status, e.Text = "PRIVMSG", "@", strings.Repeat("x", limits.TextBytes+1) }, false},
		{"a WALLOPS", func(e *Event) { e.Command, e.Venue, e.Text = "WALLOPS", "", "hi" }, true},
		{"a WALLOPS to a channel", func(e *Event) { e.Command, e.Text = "WALLOPS", "hi" }, false},
		{"a WALLOPS with a status", func(e *Event) { e.Command, e.Venue, e.Status, e.Text = "WALLOPS", "", "@", "hi" }, false},
		{"a WALLOPS without text", func(e *Event) { e.Command, e.Venue = "WALLOPS", "" }, false},
		{"a WALLOPS without sender", func(e *Event) { e.Command, e.Venue, e.Text, e.Sender = "WALLOPS", "", "hi", "" }, false},
		{"a WALLOPS without msgid", func(e *Event) { e.Command, e.Venue, e.Text, e.MsgID = "WALLOPS", "", "hi", "" }, false},
		{"a WALLOPS without time", func(e *Event) { e.Command, e.Venue, e.Text, e.TimeMS = "WALLOPS", "", "hi", 0 }, false},
		{"an oversized WALLOPS", func(e *Event) { e.Command, e.Venue, e.Text = "WALLOPS", "", strings.Repeat("x", limits.TextBytes+1) }, false},
		{"no venue", func(e *Event) { e.Venue = "" }, false},
	}
	for _, tt := range tests {
		e := ok
		tt.mutate(&e)
		if err := validateEphemeral(e); (err == nil) != tt.valid {
			t.Errorf("%s: err = %v, want valid=%v", tt.name, err, tt.valid)
		}
	}
}

func TestPullRejectsBadReactionCursor(t *testing.T) {
	c := newCluster(t, "a", "b")
	a, b := c.nodes["did:web:a"], c.nodes["did:web:b"]
	for _, q := range []struct {
		query string
		want  int
	}{
		{"?after=0&reacted_after=-2", http.StatusBadRequest},
		{"?after=0&reacted_after=x", http.StatusBadRequest},
		{"?after=0&reacted_after=0", http.StatusOK},
	} {
		path := "/internal/v1/events" + q.query
		req, _ := http.NewRequest(http.MethodGet, a.srv.URL+path, nil)
		sign(req.Header, b.key, b.did, http.MethodGet, path, nil, time.Now())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != q.want {
			t.Errorf("%s: status %d, want %d", q.query, resp.StatusCode, q.want)
		}
	}
}
