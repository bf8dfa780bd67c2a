package signingapi

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/raft/fsm"
)

func TestFetchedKeysBounded(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	key := map[string]*fsm.KeyRecord{"k": {KID: "k"}}
	f := newFetchedKeys(3)
	for i := range 5 {
		f.put(fmt.Sprintf("did:web:d%d", i), t0, key)
	}
	if f.len() != 3 {
		t.Fatalf("%d documents held, want 3", f.len())
	}
	if f.key("did:web:d0", "k", t0, time.Hour, time.Minute) != nil || f.key("did:web:d4", "k", t0, time.Hour, time.Minute) == nil {
		t.Fatalf("evicted the wrong documents")
	}
	// d2 is used, so d3 is the least recently used and goes first.
	f.key("did:web:d2", "k", t0, time.Hour, time.Minute)
	f.put("did:web:d5", t0, key)
	if f.key("did:web:d3", "k", t0, time.Hour, time.Minute) != nil || f.key("did:web:d2", "k", t0, time.Hour, time.Minute) == nil {
		t.Fatalf("did not evict the least recently used document")
	}
	cases := []struct {
		name      string
		keys      map[string]*fsm.KeyRecord
		after     time.Duration
		wantFresh bool
	}{
		{"hit within the TTL", key, 59 * time.Minute, true},
		{"hit after the TTL", key, time.Hour, false},
		{"miss within the retry", nil, 59 * time.Second, true},
		{"miss after the retry", nil, time.Minute, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.put("did:web:x", t0, tc.keys)
			if _, fresh := f.lookup("did:web:x", t0.Add(tc.after), time.Hour, time.Minute); fresh != tc.wantFresh {
				t.Fatalf("fresh = %v, want %v", fresh, tc.wantFresh)
			}
		})
	}
}

// TestBatchLookupKeepsDIDWebKeysOutOfRaft: a key the batch lookup reads from a did:web document
// is served from the node's cache; nothing is proposed, and the document is read once.
func TestBatchLookupKeepsDIDWebKeysOutOfRaft(t *testing.T) {
	f := newFixture(t)
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	mk, err := keyresolver.EncodeMultikey(keyresolver.PublicKey{Type: keyresolver.Ed25519, Raw: pub})
	if err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int32
	var did string
	web := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reads.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": did, "verificationMethod": []map[string]string{
			{"id": did + "#k", "type": "Multikey", "controller": did, "publicKeyMultibase": mk}}})
	}))
	t.Cleanup(web.Close)
	did = "did:web:" + strings.Replace(strings.TrimPrefix(web.URL, "https://"), ":", "%3A", 1)
	pool := x509.NewCertPool()
	pool.AddCert(web.Certificate())
	f.api.cfg.Resolver = keyresolver.New(keyresolver.Options{AllowPrivateAddresses: true, RootCAs: pool})
	proposedBefore := f.index.Load()

	kid := signing.KID(pub)
	for range 2 {
		code, body := f.get("/api/v1/signing-keys?keys="+url.QueryEscape(did+"/"+kid), "")
		keys, _ := body["keys"].([]any)
		if code != 200 || len(keys) != 1 || keys[0].(map[string]any)["kid"] != kid {
			t.Fatalf("batch lookup: %d %v", code, body)
		}
	}
	if n := reads.Load(); n != 1 {
		t.Fatalf("the document was read %d times", n)
	}
	if f.index.Load() != proposedBefore {
		t.Fatalf("the batch lookup proposed %d commands", f.index.Load()-proposedBefore)
	}
	f.machine.Read(func(st *fsm.State) {
		if len(st.KeysOf(did)) != 0 {
			t.Fatalf("the did:web key is in the replicated state")
		}
	})
}
