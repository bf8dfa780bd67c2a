package keyresolver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestClientResolutionLimit: fresh resolutions made for one client stop at
// its burst without reaching the network; cached answers, other clients
// and the server's own resolutions go on.
func TestClientResolutionLimit(t *testing.T) {
	srv := newDocServer(t)
	base := srv.webDID()
	for i := range 6 {
		did := fmt.Sprintf("%s:u%d", base, i)
		srv.serve(fmt.Sprintf("/u%d/did.json", i), 200, didDocJSON(did))
	}
	r := srv.testResolver(Options{ClientResolutions: 1, ClientBurst: 3})
	now := time.Unix(1_800_000_000, 0)
	r.now = func() time.Time { return now }
	did := func(i int) string { return fmt.Sprintf("%s:u%d", base, i) }
	alice := WithClient(context.Background(), "192.0.2.1:4000")
	sameClient := WithClient(context.Background(), "192.0.2.1:5000")
	ipv6 := WithClient(context.Background(), "[2001:db8::1]:1")
	ipv6Same64 := WithClient(context.Background(), "2001:db8::ffff")
	bob := WithClient(context.Background(), "192.0.2.2")

	steps := []struct {
		name    string
		ctx     context.Context
		did     string
		wantErr error
	}{
		{"first", alice, did(0), nil},
		{"second, another port of the same address", sameClient, did(1), nil},
		{"third", alice, did(2), nil},
		{"over the burst", alice, did(3), ErrRateLimited},
		{"a cached document is free", alice, did(0), nil},
		{"another client", bob, did(3), nil},
		{"the server's own", context.Background(), did(4), nil},
		{"IPv6", ipv6, did(5), nil},
		{"IPv6 /64", ipv6Same64, base + ":u9", ErrNotFound},
		{"IPv6 /64 again", ipv6Same64, base + ":u8", ErrNotFound},
		{"IPv6 /64 over", ipv6, base + ":u7", ErrRateLimited},
	}
	for _, st := range steps {
		_, err := r.Resolve(st.ctx, st.did)
		if !errors.Is(err, st.wantErr) {
			t.Fatalf("%s: Resolve error = %v, want %v", st.name, err, st.wantErr)
		}
	}
	if n := srv.hitCount("/u3/did.json"); n != 1 {
		t.Errorf("the refused resolution reached the network: %d fetches of u3, want 1 (bob's)", n)
	}
	if n := srv.hitCount("/u7/did.json"); n != 0 {
		t.Errorf("u7 fetched %d times, want 0", n)
	}
	now = now.Add(time.Minute)
	if _, err := r.Resolve(alice, did(3)); err != nil {
		t.Errorf("after a minute: %v", err)
	}
}

// TestClientLimitsBounded: a flood of client addresses keeps a bounded
// number of buckets.
func TestClientLimitsBounded(t *testing.T) {
	l := newClientLimits(1, 1)
	now := time.Unix(1_800_000_000, 0)
	for i := range maxClients + 100 {
		l.allow(fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), now)
	}
	if n := len(l.byKey); n > maxClients {
		t.Fatalf("%d buckets, want at most %d", n, maxClients)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFailureLoggedOnceShort: a failed resolution of a long DID is logged
// once, and neither the log line nor the error carries the whole DID.
func TestFailureLoggedOnceShort(t *testing.T) {
	srv := newDocServer(t)
	var logs syncBuffer
	r := srv.testResolver(Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	long := srv.webDID() + ":" + strings.Repeat("a", 1900)
	_, err := r.Resolve(context.Background(), long)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("Resolve error = %v, want ErrNotFound", err)
	}
	if len(err.Error()) > 400 {
		t.Errorf("error is %d bytes: %.200s…", len(err.Error()), err)
	}
	out := logs.String()
	if n := strings.Count(out, "\n"); n != 1 {
		t.Errorf("%d log lines, want 1:\n%s", n, out)
	}
	if len(out) > 600 || strings.Contains(out, strings.Repeat("a", 200)) {
		t.Errorf("log line is %d bytes and carries the DID: %.300s…", len(out), out)
	}
}

func TestShortDID(t *testing.T) {
	tests := []struct{ in, want string }{
		{"did:web:example.com", "did:web:example.com"},
		{strings.Repeat("x", 96), strings.Repeat("x", 96)},
		{strings.Repeat("x", 97), strings.Repeat("x", 96) + "…"},
		{strings.Repeat("x", 95) + "é", strings.Repeat("x", 95) + "…"},
	}
	for _, tt := range tests {
		if got := ShortDID(tt.in); got != tt.want {
			t.Errorf("ShortDID(%.20q…) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
