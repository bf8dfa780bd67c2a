package peering

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/node/signing"
)

// keyPeer is a peer serving its did.json (one server key) and refusing every user-key request,
// counting both.
type keyPeer struct {
	peer        Peer
	kid         string
	docReads    atomic.Int64
	authorReads atomic.Int64
}

func newKeyPeer(t *testing.T) *keyPeer {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := keyresolver.EncodeMultikey(keyresolver.PublicKey{Type: keyresolver.Ed25519, Raw: pub})
	if err != nil {
		t.Fatal(err)
	}
	p := &keyPeer{kid: signing.KID(pub)}
	const did = "did:web:peer.example"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/did.json" {
			p.docReads.Add(1)
			fmt.Fprintf(w, `{"id":%q,"verificationMethod":[{"id":"#k","type":"Multikey","publicKeyMultibase":%q}]}`, did, mb)
			return
		}
		p.authorReads.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	p.peer = Peer{DID: did, BaseURL: srv.URL, Trust: TrustRelay}
	return p
}

// TestForgedKidsCostOneDocumentRead: envelopes naming a configured peer with a fresh kid each
// make at most one read of the peer's document per refresh interval.
func TestForgedKidsCostOneDocumentRead(t *testing.T) {
	p := newKeyPeer(t)
	now := time.Unix(1_800_000_000, 0)
	k := newPeerKeys(http.DefaultClient, time.Minute, func() time.Time { return now }, nil)
	ctx := context.Background()
	for i := range 200 {
		if _, err := k.lookup(ctx, p.peer, fmt.Sprintf("forged%d", i)); !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("forged kid %d: err = %v, want ErrUnknownKey", i, err)
		}
	}
	if n := p.docReads.Load(); n != 1 {
		t.Fatalf("200 forged kids read the document %d times, want 1", n)
	}
	if _, err := k.lookup(ctx, p.peer, p.kid); err != nil {
		t.Fatalf("the real kid, read before: %v", err)
	}
	now = now.Add(peerDocumentRefresh)
	if _, err := k.lookup(ctx, p.peer, "forged-later"); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("after the interval: err = %v", err)
	}
	if n := p.docReads.Load(); n != 2 {
		t.Fatalf("after the interval: %d reads, want 2", n)
	}
}

// TestForgedAuthorKeysBounded: look-ups of user keys with attacker-chosen DIDs and kids reach
// the peer at a bounded rate and leave a bounded set of remembered misses.
func TestForgedAuthorKeysBounded(t *testing.T) {
	p := newKeyPeer(t)
	now := time.Unix(1_800_000_000, 0)
	k := newPeerKeys(http.DefaultClient, time.Minute, func() time.Time { return now }, nil)
	ctx := context.Background()
	for i := range maxMisses + 500 {
		if i%authorKeyBurst == 0 {
			now = now.Add(authorKeyBurst * authorKeyEvery) // refill, so that misses pile up
		}
		did := fmt.Sprintf("did:web:u%d.peer.example", i)
		if _, err := k.authorKey(ctx, p.peer, did, "kid"); !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("look-up %d: err = %v, want ErrUnknownKey", i, err)
		}
	}
	if n := k.misses.Len(); n > maxMisses {
		t.Errorf("%d misses remembered, want at most %d", n, maxMisses)
	}
	asked := p.authorReads.Load()
	for i := range 100 { // no refill: the burst is spent after authorKeyBurst requests
		k.authorKey(ctx, p.peer, fmt.Sprintf("did:web:v%d.peer.example", i), "kid")
	}
	if n := p.authorReads.Load() - asked; n > authorKeyBurst {
		t.Errorf("100 look-ups at once asked the peer %d times, want at most %d", n, authorKeyBurst)
	}
	now = now.Add(authorKeyBurst * authorKeyEvery) // refilled, and within the miss TTL
	asked = p.authorReads.Load()
	k.authorKey(ctx, p.peer, fmt.Sprintf("did:web:u%d.peer.example", maxMisses+499), "kid") // a remembered miss
	if p.authorReads.Load() != asked {
		t.Error("a remembered miss was asked again")
	}
	k.authorKey(ctx, p.peer, "did:web:new.peer.example", "kid")
	if p.authorReads.Load() != asked+1 {
		t.Error("a new look-up after the refill was not asked")
	}
}
