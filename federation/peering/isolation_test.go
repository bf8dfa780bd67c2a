package peering

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/testcluster/poll"
)

// signingPeer is a peer server serving its did.json with one server key, whose envelopes the
// test seals.
func signingPeer(t *testing.T, did string) (Peer, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := keyresolver.EncodeMultikey(keyresolver.PublicKey{Type: keyresolver.Ed25519, Raw: pub})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/did.json" {
			fmt.Fprintf(w, `{"id":%q,"verificationMethod":[{"id":"#k","type":"Multikey","publicKeyMultibase":%q}]}`, did, mb)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return Peer{DID: did, BaseURL: srv.URL, Trust: TrustRelay}, priv
}

// TestSlowPeerHoldsOnlyItsOwnInbound: while one peer's envelope is being applied (its lock
// held), another peer's envelope is applied; the first peer's next one waits its turn.
func TestSlowPeerHoldsOnlyItsOwnInbound(t *testing.T) {
	slow, slowKey := signingPeer(t, "did:web:slow.example")
	fast, fastKey := signingPeer(t, "did:web:fast.example")
	store, err := eventstore.Open(context.Background(), eventstore.Options{Path: t.TempDir() + "/e.db", NoSync: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	f, err := New(Config{SendEvery: time.Second, CatchUpWindow: 24 * time.Hour, ServerDID: "did:web:b.example", NodeName: "n1", Key: key, Client: http.DefaultClient,
		Peers: []Peer{slow, fast}, Store: store, State: fixedState{fsm.NewFixture().State()},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	envelope := func(p Peer, k ed25519.PrivateKey, seq int64) []byte {
		body, err := Seal(k, Batch{From: p.DID, To: "did:web:b.example", Seq: seq, SentAt: time.Now().Unix()})
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	accept := func(body []byte) <-chan int {
		done := make(chan int, 1)
		go func() {
			_, status, _ := f.Accept(context.Background(), body)
			done <- status
		}()
		return done
	}

	held := f.inbound[slow.DID]
	held.Lock() // an envelope of the slow peer being applied
	slowDone := accept(envelope(slow, slowKey, 1))
	fastDone := accept(envelope(fast, fastKey, 1))
	var fastStatus int
	poll.Until(t, "the other peer's envelope applied", func() bool {
		select {
		case fastStatus = <-fastDone:
			return true
		default:
			return false
		}
	})
	if fastStatus != http.StatusOK {
		t.Fatalf("the other peer's envelope: %d", fastStatus)
	}
	select {
	case s := <-slowDone:
		t.Fatalf("the slow peer's next envelope was applied (%d) while its previous one still was", s)
	default:
	}
	held.Unlock()
	if s := <-slowDone; s != http.StatusOK {
		t.Fatalf("the slow peer's envelope after its turn: %d", s)
	}
}
