package peering

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestGuardedDropsOnlyTheItemThatPanicked(t *testing.T) {
	boom := errors.New("store down")
	tests := []struct {
		name    string
		apply   func() (outcome, error)
		want    outcome
		wantErr error
		logged  bool
	}{
		{"stored", func() (outcome, error) { return outcomeStored, nil }, outcomeStored, nil, false},
		{"error passes through", func() (outcome, error) { return "", boom }, "", boom, false},
		{"panic drops the item", func() (outcome, error) { panic("bug") }, outcomeFailed, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			f := &Federation{log: slog.New(slog.NewTextHandler(&logs, nil))}
			got, err := f.guarded(Peer{DID: "did:web:p.example"}, "an event", tt.apply)
			if got != tt.want || !errors.Is(err, tt.wantErr) {
				t.Fatalf("guarded = %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
			if l := logs.String(); tt.logged != (strings.Contains(l, "panic=bug") && strings.Contains(l, "stack=")) {
				t.Fatalf("log = %q", l)
			}
		})
	}
}

func TestFlushGuardedTurnsAPanicIntoAFailedRound(t *testing.T) {
	var logs bytes.Buffer
	// An outbox of a federation without a state: collecting panics on the nil State.
	f := &Federation{log: slog.New(slog.NewTextHandler(&logs, nil)), cfg: Config{}}
	o := newOutbox(f, Peer{DID: "did:web:p.example"})
	err := o.flushGuarded(context.Background())
	if err == nil || !strings.Contains(err.Error(), "panic") {
		t.Fatalf("flushGuarded = %v, want a failed round", err)
	}
	if !strings.Contains(logs.String(), "stack=") {
		t.Fatalf("log = %q", logs.String())
	}
}
