package sasl

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/keyresolver"
)

// identityHost is one loopback TLS server acting as did:web host for several
// DIDs (did:web:127.0.0.1%3Aport:<name>) and as their PDS.
type identityHost struct {
	srv    *httptest.Server
	mu     sync.Mutex
	docs   map[string]string // path → document
	tokens map[string]string // access token → DID the PDS reports
	authz  []string          // Authorization headers seen by getSession
}

func newIdentityHost(t *testing.T) *identityHost {
	t.Helper()
	h := &identityHost{docs: map[string]string{}, tokens: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /xrpc/com.atproto.server.getSession", func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		auth := r.Header.Get("Authorization")
		h.authz = append(h.authz, auth)
		did, ok := h.tokens[strings.TrimPrefix(auth, "Bearer ")]
		h.mu.Unlock()
		if !ok || !strings.HasPrefix(auth, "Bearer ") {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"InvalidToken"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"did":%q,"handle":"someone.test"}`, did)
	})
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		doc, ok := h.docs[r.URL.Path]
		h.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, doc)
	})
	h.srv = httptest.NewUnstartedServer(mux)
	h.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	h.srv.StartTLS()
	t.Cleanup(h.srv.Close)
	return h
}

// addDID publishes a document for did:web:<host>:<name> with the given
// authentication key (may be empty) and PDS endpoint, and returns the DID.
func (h *identityHost) addDID(name, multikey, pds string) string {
	u, _ := url.Parse(h.srv.URL)
	did := "did:web:" + strings.ReplaceAll(u.Host, ":", "%3A") + ":" + name
	doc := map[string]any{
		"id":          did,
		"alsoKnownAs": []string{"at://" + name + ".test"},
		"service": []map[string]any{{
			"id": "#atproto_pds", "type": "AtprotoPersonalDataServer", "serviceEndpoint": pds,
		}},
	}
	if multikey != "" {
		doc["verificationMethod"] = []map[string]any{{
			"id": did + "#atproto", "type": "Multikey", "controller": did, "publicKeyMultibase": multikey,
		}}
		doc["authentication"] = []string{"#atproto"}
	}
	data, _ := json.Marshal(doc)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.docs["/"+name+"/did.json"] = string(data)
	return did
}

func (h *identityHost) grant(token, did string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tokens[token] = did
}

func (h *identityHost) resolver(allowPrivate bool) *keyresolver.Resolver {
	pool := x509.NewCertPool()
	pool.AddCert(h.srv.Certificate())
	return keyresolver.New(keyresolver.Options{AllowPrivateAddresses: allowPrivate, RootCAs: pool, Timeout: 5 * time.Second})
}

func TestVerifyDIDWebSignature(t *testing.T) {
	h := newIdentityHost(t)
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	mk, err := keyresolver.EncodeMultikey(keyresolver.PublicKey{Type: keyresolver.Ed25519, Raw: priv.Public().(ed25519.PublicKey)})
	if err != nil {
		t.Fatal(err)
	}
	alice := h.addDID("alice", mk, h.srv.URL)
	keyless := h.addDID("keyless", "", h.srv.URL)
	ch, err := NewChallenge("s", baseTime, &countingReader{})
	if err != nil {
		t.Fatal(err)
	}
	sig := base64.RawURLEncoding.EncodeToString(ed25519.Sign(priv, ch.JSON))

	tests := []struct {
		name     string
		resp     Response
		resolver *keyresolver.Resolver
		wantErr  error
	}{
		{"signed by the document key", Response{DID: alice, Signature: sig}, h.resolver(true), nil},
		{"document without keys", Response{DID: keyless, Signature: sig}, h.resolver(true), ErrRejected},
		{"unknown DID", Response{DID: strings.TrimSuffix(alice, "alice") + "nobody", Signature: sig}, h.resolver(true), keyresolver.ErrNotFound},
		{"SSRF guard on", Response{DID: alice, Signature: sig}, h.resolver(false), keyresolver.ErrBlockedAddress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := (&Verifier{Resolver: tt.resolver}).Verify(context.Background(), ch, tt.resp, baseTime)
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil && !errors.Is(err, ErrRejected) {
				t.Fatalf("Verify = %v, want it to wrap ErrRejected too", err)
			}
		})
	}
}

func TestVerifyAtprotoSession(t *testing.T) {
	h := newIdentityHost(t)
	pds := h.srv.URL
	bob := h.addDID("bob", "", pds)
	carol := h.addDID("carol", "", pds+"/")
	plainPDS := h.addDID("plain", "", strings.Replace(pds, "https://", "http://", 1))
	queryPDS := h.addDID("query", "", pds+"?x=1")
	h.grant("bob-token", bob)
	h.grant("carol-token", carol)
	h.grant("plain-token", plainPDS)
	h.grant("stolen-token", "did:web:elsewhere.test")

	ch, err := NewChallenge("s", baseTime, &countingReader{})
	if err != nil {
		t.Fatal(err)
	}
	resp := func(did, token, method, pdsURL, nonce string) Response {
		return Response{DID: did, Signature: token, Method: method, PDSURL: pdsURL, ChallengeNonce: nonce}
	}
	tests := []struct {
		name    string
		resp    Response
		at      time.Duration
		wantErr error
	}{
		{"atproto", resp(bob, "bob-token", "atproto", "", ch.Nonce), 0, nil},
		{"pds-session alias", resp(bob, "bob-token", "pds-session", "", ch.Nonce), 0, nil},
		{"pds_url matches", resp(bob, "bob-token", "atproto", pds+"/", ch.Nonce), 0, nil},
		{"pds_url matches despite document's trailing slash", resp(carol, "carol-token", "atproto", strings.ToUpper(pds[:8])+pds[8:], ch.Nonce), 0, nil},
		{"pds_url differs", resp(bob, "bob-token", "atproto", "https://pds.elsewhere.test", ch.Nonce), 0, ErrRejected},
		{"wrong nonce", resp(bob, "bob-token", "atproto", "", "AAAA"), 0, ErrRejected},
		{"missing nonce", resp(bob, "bob-token", "atproto", "", ""), 0, ErrRejected},
		{"token refused by PDS", resp(bob, "wrong-token", "atproto", "", ch.Nonce), 0, ErrRejected},
		{"token of another DID", resp(bob, "stolen-token", "atproto", "", ch.Nonce), 0, ErrRejected},
		{"token of another user at the same PDS", resp(bob, "carol-token", "atproto", "", ch.Nonce), 0, ErrRejected},
		{"token with a line break", resp(bob, "bob-token\r\nX: y", "atproto", "", ch.Nonce), 0, ErrRejected},
		{"plain http PDS", resp(plainPDS, "plain-token", "atproto", "", ch.Nonce), 0, ErrRejected},
		{"PDS URL with a query", resp(queryPDS, "bob-token", "atproto", "", ch.Nonce), 0, ErrRejected},
		{"expired", resp(bob, "bob-token", "atproto", "", ch.Nonce), 61 * time.Second, ErrChallengeExpired},
		{"unknown method", resp(bob, "bob-token", "pds-oauth", "", ch.Nonce), 0, ErrUnsupportedMethod},
	}
	v := &Verifier{Resolver: h.resolver(true)}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Verify(context.Background(), ch, tt.resp, baseTime.Add(tt.at))
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify = %v, want %v", err, tt.wantErr)
			}
		})
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, auth := range h.authz {
		if auth == "Bearer plain-token" {
			t.Fatal("a token was sent to a plain-http PDS")
		}
	}
	if len(h.authz) == 0 || h.authz[0] != "Bearer bob-token" {
		t.Fatalf("getSession Authorization headers: %q", h.authz)
	}
}

func TestVerifyAllowList(t *testing.T) {
	ed := ed25519Signer(t, 1)
	ch, err := NewChallenge("s", baseTime, &countingReader{})
	if err != nil {
		t.Fatal(err)
	}
	resp := Response{DID: ed.did, Signature: base64.RawURLEncoding.EncodeToString(ed.sign(ch.JSON))}
	var asked []string
	v := &Verifier{Resolver: keyresolver.New(keyresolver.Options{}), Allow: func(did string) bool {
		asked = append(asked, did)
		return false
	}}
	if err := v.Verify(context.Background(), ch, resp, baseTime); !errors.Is(err, ErrNotAllowed) {
		t.Fatalf("Verify = %v, want ErrNotAllowed", err)
	}
	resp.Signature = base64.RawURLEncoding.EncodeToString(make([]byte, 64))
	if err := v.Verify(context.Background(), ch, resp, baseTime); !errors.Is(err, ErrRejected) {
		t.Fatalf("Verify = %v, want ErrRejected before the allow-list", err)
	}
	if len(asked) != 1 || asked[0] != ed.did {
		t.Fatalf("allow-list consulted for %q", asked)
	}
	if err := (&Verifier{}).Verify(context.Background(), ch, Response{DID: ed.did, Signature: "AA"}, baseTime); !errors.Is(err, ErrRejected) {
		t.Fatalf("Verify without a resolver = %v", err)
	}
}

func TestConversationOverTLS(t *testing.T) {
	h := newIdentityHost(t)
	dave := h.addDID("dave", "", h.srv.URL)
	h.grant("dave-token", dave)
	conv := NewConversation(&Verifier{Resolver: h.resolver(true)}, "sess-1", &countingReader{})
	steps := []step{
		mech(),
		{param: func(t *testing.T, issued []Challenge) string {
			return encodeResponse(t, map[string]any{
				"did": dave, "signature": "dave-token", "method": "atproto", "pds_url": h.srv.URL, "challenge_nonce": issued[0].Nonce,
			})
		}, want: Result{Outcome: OutcomeSuccess, DID: dave, Method: "atproto"}},
		mech(),
		{param: func(t *testing.T, issued []Challenge) string {
			return encodeResponse(t, map[string]any{
				"did": dave, "signature": "dave-token", "method": "pds-session", "challenge_nonce": issued[0].Nonce,
			})
		}, want: failedCounted},
	}
	runSteps(t, conv, steps)
	if conv.Failures() != 1 {
		t.Fatalf("Failures = %d", conv.Failures())
	}
}
