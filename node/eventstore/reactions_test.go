package eventstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestReactions(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: t.TempDir() + "/r.db", NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	steps := []struct {
		add                  bool
		root, reactor, emoji string
	}{
		{true, "m1", "did:key:a", "👍"},
		{true, "m1", "did:key:a", "👍"}, // once per reactor and emoji
		{true, "m1", "did:key:b", "👍"},
		{true, "m1", "nick:guest", "🎉"},
		{true, "m2", "did:key:a", "👀"},
		{false, "m2", "did:key:a", "👀"},
		{false, "m2", "did:key:z", "👀"}, // absent: no change
	}
	for _, st := range steps {
		if st.add {
			err = s.React(ctx, st.root, st.reactor, "n", st.emoji, now)
		} else {
			err = s.Unreact(ctx, st.root, st.reactor, st.emoji)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Reactions(ctx, []string{"m1", "m2", "m3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["m1"]["👍"] != 2 || got["m1"]["🎉"] != 1 {
		t.Fatalf("tallies = %v", got)
	}
	if err := s.React(ctx, "m1", "did:key:a", "n", strings.Repeat("x", MaxEmojiBytes+1), now); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("oversized emoji: %v", err)
	}
}
