package peering

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRequestsFollowTheLinkState: a request made before the outbox's first attempt finished
// (right after the node started) waits for that attempt's outcome instead of being refused as if
// the link were down; a request made while the link is known to be down is refused at once and
// never queued; and a queued request hears the outcome of the envelope that carried it.
func TestRequestsFollowTheLinkState(t *testing.T) {
	errSend := errors.New("connection refused")
	tests := []struct {
		name    string
		link    linkState
		outcome func(o *outbox, queued []*queuedItem) // what the outbox's attempt found (nil: the request is not queued)
		want    error
		refused string
	}{
		{"first attempt pending, then accepted", linkUnknown, func(o *outbox, q []*queuedItem) { o.sent(q, Ack{OK: true}) }, nil, ""},
		{"first attempt pending, then refused by the home", linkUnknown, func(o *outbox, q []*queuedItem) {
			o.sent(q, Ack{OK: true, Refused: map[string]string{q[0].requestID(): "not-op"}})
		}, ErrRefusedByHome, "not-op"},
		{"first attempt pending, then it fails", linkUnknown, func(o *outbox, _ []*queuedItem) { o.failRequests(errSend) }, ErrLinkDown, ""},
		{"link up, accepted", linkUp, func(o *outbox, q []*queuedItem) { o.sent(q, Ack{OK: true}) }, nil, ""},
		{"link down", linkDown, nil, ErrLinkDown, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Now()
			f, _ := testFederation(t, &now)
			o := newOutbox(f, f.peers["did:web:a.example"]) // not running: the test plays its part
			o.link = tt.link
			f.outboxes["did:web:a.example"] = o
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- f.RequestChange(ctx, Change{Kind: ChangeMode, Channel: "#c", Actor: "bob!u@h", ActorDID: "did:plc:bob",
					Modes: []ModeChange{{Add: true, Mode: "m"}}})
			}()
			if tt.outcome != nil {
				select {
				case <-o.kickc: // queued: the request woke the outbox
				case err := <-done:
					t.Fatalf("request answered %v before the outbox's attempt finished", err)
				case <-ctx.Done():
					t.Fatal("the request was never queued")
				}
				o.mu.Lock()
				queued := append([]*queuedItem(nil), o.queued...)
				o.mu.Unlock()
				tt.outcome(o, queued)
			}
			var err error
			select {
			case err = <-done:
			case <-ctx.Done():
				t.Fatal("the request never heard its outcome")
			}
			var refused *RefusedError
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) || (tt.refused != "" && (!errors.As(err, &refused) || refused.Why != tt.refused)) {
				t.Fatalf("RequestChange = %v, want %v", err, tt.want)
			}
			if o.mu.Lock(); len(o.queued) != 0 {
				t.Errorf("%d requests left in the queue", len(o.queued))
			}
			o.mu.Unlock()
		})
	}
}
