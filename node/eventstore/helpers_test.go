package eventstore

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// t0 is the fixtures' epoch: a whole second, so t0+n seconds are distinct unix seconds.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

var quietLogger = slog.New(slog.DiscardHandler)

func at(d time.Duration) time.Time { return t0.Add(d) }

func openTestStore(t testing.TB, noSync bool) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(context.Background(), Options{Path: path, NoSync: noSync, Logger: quietLogger})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, path
}

func newMsg(id, venue string, when time.Time, text string) *Message {
	return &Message{
		MsgID: id, Venue: venue, Command: "PRIVMSG",
		Sender: "alice!a@host", SenderNick: "alice", SenderDID: "did:plc:alice",
		Text: text, Time: when, Origin: "node-a",
		Tags: map[string]string{"+freeq.at/sig": "sig-" + id},
	}
}

func newEdit(id, replaces string, root *Message, when time.Time, text string) *Message {
	m := newMsg(id, root.Venue, when, text)
	m.ReplacesMsgID = replaces
	m.Tags = map[string]string{"+draft/edit": replaces, "+freeq.at/sig": "sig-" + id}
	return m
}

func mustAppend(t testing.TB, s *Store, msgs ...*Message) {
	t.Helper()
	if err := s.Append(context.Background(), msgs...); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

func ids(msgs []Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.MsgID
	}
	return out
}

// wantIDs checks a view's result (or its error) against the expected msgids.
func wantIDs(t *testing.T, got []Message, err error, want []string, wantErr error) {
	t.Helper()
	if wantErr != nil {
		if !errors.Is(err, wantErr) {
			t.Fatalf("err = %v, want %v", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if g := ids(got); !slices.Equal(g, want) && !(len(g) == 0 && len(want) == 0) {
		t.Fatalf("got %v, want %v", g, want)
	}
}
