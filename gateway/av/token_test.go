package av

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// testKeys is a two-node key registry: node-a signs, both verify.
type testKeys struct {
	issuer, kid string
	priv        ed25519.PrivateKey
	pubs        map[string]ed25519.PublicKey // issuer+" "+kid → key
}

func newTestKeys(t testing.TB) *testKeys {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &testKeys{issuer: "did:web:node-a", kid: "k1", priv: priv, pubs: map[string]ed25519.PublicKey{"did:web:node-a k1": pub}}
}

func (k *testKeys) Issuer() (string, string) { return k.issuer, k.kid }
func (k *testKeys) Sign(msg []byte) []byte   { return ed25519.Sign(k.priv, msg) }
func (k *testKeys) Verify(issuer, kid string, msg, sig []byte) bool {
	pub, ok := k.pubs[issuer+" "+kid]
	return ok && ed25519.Verify(pub, msg, sig)
}

func TestTokens(t *testing.T) {
	keys := newTestKeys(t)
	now := time.Unix(1_800_000_000, 0)
	tok, cl, err := mintToken(keys, "CALL1", "#c", "did:plc:alice", now)
	if err != nil {
		t.Fatal(err)
	}
	if cl.Exp != now.Add(TokenTTL).Unix() || cl.Issuer != "did:web:node-a" || cl.KID != "k1" {
		t.Fatalf("claims %+v", cl)
	}
	body, sig, _ := strings.Cut(tok, ".")
	reclaim := func(f func(*Claims)) string {
		c := cl
		f(&c)
		data, _ := json.Marshal(c)
		return b64.EncodeToString(data) + "." + sig
	}
	other := newTestKeys(t) // a key the registry does not hold
	foreign, _, _ := mintToken(other, "CALL1", "#c", "did:plc:alice", now)
	for _, tc := range []struct {
		name  string
		token string
		at    time.Time
		want  error
	}{
		{"valid", tok, now, nil},
		{"valid just before expiry", tok, now.Add(TokenTTL - time.Second), nil},
		{"expired", tok, now.Add(TokenTTL), ErrTokenExpired},
		{"empty", "", now, ErrTokenMalformed},
		{"no signature", body, now, ErrTokenMalformed},
		{"bad base64", "!!." + sig, now, ErrTokenMalformed},
		{"not json", b64.EncodeToString([]byte("nope")) + "." + sig, now, ErrTokenMalformed},
		{"extra field", b64.EncodeToString([]byte(`{"call":"x","channel":"#c","did":"d","iss":"i","kid":"k","exp":1,"nonce":"n","admin":true}`)) + "." + sig, now, ErrTokenMalformed},
		{"too long", strings.Repeat("a", maxTokenLen+1), now, ErrTokenMalformed},
		{"other call", reclaim(func(c *Claims) { c.Call = "CALL2" }), now, ErrTokenSignature},
		{"other account", reclaim(func(c *Claims) { c.Account = "did:plc:mallory" }), now, ErrTokenSignature},
		{"longer life", reclaim(func(c *Claims) { c.Exp += 3600 }), now, ErrTokenSignature},
		{"unknown key", foreign, now, ErrTokenSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseToken(keys, tc.token, tc.at)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if err == nil && got != cl {
				t.Fatalf("claims %+v, want %+v", got, cl)
			}
		})
	}
	// Two tokens for the same call differ (nonce).
	tok2, _, _ := mintToken(keys, "CALL1", "#c", "did:plc:alice", now)
	if tok2 == tok {
		t.Error("two tokens are equal")
	}
}

func FuzzParseToken(f *testing.F) {
	keys := newTestKeys(f)
	tok, _, _ := mintToken(keys, "CALL1", "#c", "did:plc:alice", time.Unix(1_800_000_000, 0))
	f.Add(tok)
	f.Add("")
	f.Add("a.b")
	f.Fuzz(func(t *testing.T, s string) {
		cl, err := parseToken(keys, s, time.Unix(1_800_000_000, 0))
		if err == nil && (cl.Call == "" || cl.Account == "") {
			t.Fatalf("accepted claims without call or account: %+v", cl)
		}
	})
}

func TestWSURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:80/": "ws://127.0.0.1:80", "https://chat.example": "wss://chat.example", "x": "x",
	} {
		if got := wsURL(in); got != want {
			t.Errorf("wsURL(%q) = %q, want %q", in, got, want)
		}
	}
}
