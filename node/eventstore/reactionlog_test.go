package eventstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func reactionEvent(id, origin, emoji string, remove bool, when time.Time) ReactionEvent {
	return ReactionEvent{EventID: id, Origin: origin, Root: "root", Reactor: "did:plc:bob", ReactorNick: "bob",
		Emoji: emoji, Remove: remove, At: when, Venue: "#c", Sender: "bob!b@host", SenderDID: "did:plc:bob",
		Tags: map[string]string{"+react": emoji, "+reply": "root", "+freeq.at/sig": "sig-" + id}}
}

// TestFileReaction files events in arrival order (which need not be their time order) and checks
// after each one whether it applied, what error it gave, and the tally.
func TestFileReaction(t *testing.T) {
	s, _ := openTestStore(t, true)
	ctx := context.Background()
	mustAppend(t, s, newMsg("root", "#c", at(0), "hello"))
	steps := []struct {
		name      string
		ev        ReactionEvent
		wantApply bool
		wantErr   error
		wantTally int // reactors of 👍 on root afterwards
	}{
		{"react", reactionEvent("e1", "node-a", "👍", false, at(time.Second)), true, nil, 1},
		{"repeat of a filed event", reactionEvent("e1", "node-a", "👍", false, at(time.Second)), false, ErrDuplicate, 1},
		{"react again under another id", reactionEvent("e2", "node-b", "👍", false, at(2*time.Second)), true, nil, 1},
		{"unreact", reactionEvent("e3", "node-b", "👍", true, at(3*time.Second)), true, nil, 0},
		{"an older react arriving late stays superseded", reactionEvent("e0", "node-c", "👍", false, at(time.Second/2)), false, nil, 0},
		{"same millisecond: the larger event id wins", reactionEvent("e4", "node-a", "👍", false, at(3*time.Second)), true, nil, 1},
		{"same millisecond, smaller id loses", reactionEvent("e30", "node-a", "👍", true, at(3*time.Second)), false, nil, 1},
		{"unknown root waits", func() ReactionEvent {
			e := reactionEvent("e5", "node-a", "👍", true, at(4*time.Second))
			e.Root = "missing"
			return e
		}(), false, ErrNotFound, 1},
		{"root in another venue", func() ReactionEvent {
			e := reactionEvent("e6", "node-a", "👍", true, at(4*time.Second))
			e.Venue = "#other"
			return e
		}(), false, ErrNotFound, 1},
		{"oversized emoji", reactionEvent("e7", "node-a", strings.Repeat("x", MaxEmojiBytes+1), false, at(4*time.Second)), false, ErrInvalidArgument, 1},
		{"no origin", reactionEvent("e8", "", "👍", true, at(4*time.Second)), false, ErrInvalidArgument, 1},
		{"no time", reactionEvent("e9", "node-a", "👍", true, time.Time{}), false, ErrInvalidArgument, 1},
	}
	for _, st := range steps {
		gen := s.Generation()
		applied, err := s.FileReaction(ctx, st.ev)
		if !errors.Is(err, st.wantErr) || (st.wantErr == nil && err != nil) {
			t.Fatalf("%s: err = %v, want %v", st.name, err, st.wantErr)
		}
		if applied != st.wantApply {
			t.Fatalf("%s: applied = %v, want %v", st.name, applied, st.wantApply)
		}
		tallies, err := s.Reactions(ctx, []string{"root"})
		if err != nil {
			t.Fatal(err)
		}
		if got := tallies["root"]["👍"]; got != st.wantTally {
			t.Fatalf("%s: tally = %d, want %d", st.name, got, st.wantTally)
		}
		if (st.wantErr == nil || st.wantErr == ErrDuplicate) && s.Generation() == gen {
			t.Fatalf("%s: the generation did not change", st.name)
		}
	}
}

func TestReactionLogAfter(t *testing.T) {
	s, _ := openTestStore(t, true)
	ctx := context.Background()
	mustAppend(t, s, newMsg("root", "#c", at(0), "hello"))
	for i, ev := range []ReactionEvent{
		reactionEvent("a1", "node-a", "👍", false, at(1*time.Second)),
		reactionEvent("b1", "node-b", "🎉", false, at(2*time.Second)),
		reactionEvent("a2", "node-a", "👍", true, at(3*time.Second)),
		reactionEvent("a3", "node-a", "👀", false, at(4*time.Second)),
	} {
		if _, err := s.FileReaction(ctx, ev); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	all, err := s.ReactionLogAfter(ctx, "node-a", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		origin string
		after  int64
		limit  int
		want   []string
	}{
		{"node-a", 0, 10, []string{"a1", "a2", "a3"}},
		{"node-a", 0, 2, []string{"a1", "a2"}},
		{"node-a", all[0].Seq, 10, []string{"a2", "a3"}},
		{"node-a", all[2].Seq, 10, nil},
		{"node-b", 0, 10, []string{"b1"}},
		{"node-z", 0, 10, nil},
	}
	for _, tt := range tests {
		got, err := s.ReactionLogAfter(ctx, tt.origin, tt.after, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		var gotIDs []string
		for _, r := range got {
			gotIDs = append(gotIDs, r.EventID)
		}
		if !slices.Equal(gotIDs, tt.want) {
			t.Errorf("ReactionLogAfter(%s, %d, %d) = %v, want %v", tt.origin, tt.after, tt.limit, gotIDs, tt.want)
		}
	}
	a2 := all[1]
	if !a2.Remove || a2.Emoji != "👍" || a2.Tags["+freeq.at/sig"] != "sig-a2" || a2.Sender != "bob!b@host" ||
		!a2.At.Equal(at(3*time.Second)) || a2.Venue != "#c" || a2.ReactorNick != "bob" {
		t.Errorf("round trip lost fields: %+v", a2)
	}
	if _, err := s.ReactionLogAfter(ctx, "node-a", 0, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("limit 0: %v", err)
	}
}

func TestReactionLogSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	s, path := openTestStore(t, false)
	mustAppend(t, s, newMsg("root", "#c", at(0), "hello"))
	if _, err := s.FileReaction(ctx, reactionEvent("a1", "node-a", "👍", false, at(time.Second))); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(ctx, Options{Path: path, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got, err := s2.ReactionLogAfter(ctx, "node-a", 0, 10)
	if err != nil || len(got) != 1 || got[0].EventID != "a1" {
		t.Fatalf("after reopen: %v %v", got, err)
	}
	if applied, err := s2.FileReaction(ctx, reactionEvent("a1", "node-a", "👍", false, at(time.Second))); applied || !errors.Is(err, ErrDuplicate) {
		t.Fatalf("repeat after reopen: %v %v", applied, err)
	}
}
