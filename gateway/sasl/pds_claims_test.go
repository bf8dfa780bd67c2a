package sasl

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

func jwtWith(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"ES256K","typ":"at+jwt"}`)) + "." + enc([]byte(claims)) + ".c2lnbmF0dXJl"
}

func TestTokenClaimsProblem(t *testing.T) {
	const did = "did:plc:ewvi7nxzyoun6zhxrhs64oiz"
	now := time.Unix(1_800_000_000, 0)
	tests := []struct {
		name, token, want string
	}{
		{"an access token for the DID", jwtWith(`{"scope":"com.atproto.access","sub":"` + did + `","exp":1800000600}`), ""},
		{"an opaque token is left to the PDS", "opaque-token-value", ""},
		{"no sub or exp", jwtWith(`{"scope":"com.atproto.access"}`), ""},
		{"another DID's token", jwtWith(`{"sub":"did:plc:someoneelse","exp":1800000600}`), "belongs to another DID"},
		{"expired", jwtWith(`{"sub":"` + did + `","exp":1799999999}`), "has expired"},
		{"expires now", jwtWith(`{"sub":"` + did + `","exp":1800000000}`), "has expired"},
		{"a refresh token", jwtWith(`{"scope":"com.atproto.refresh","sub":"` + did + `","exp":1810000000}`), "is a refresh token; send an access token"},
		{"claims not base64url", "a.!!!.c", "is not a well-formed JWT"},
		{"claims not an object", jwtWith(`[1]`), "has claims that are not a JSON object"},
		{"exp not a number", jwtWith(`{"exp":"soon"}`), "has claims that are not a JSON object"},
	}
	for _, tt := range tests {
		if got := tokenClaimsProblem(tt.token, did, now); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestUnfitTokenNeverLeaves: a refresh token is refused before any DID resolution or PDS request
// (the verifier here has no resolver to make either), and the error does not quote it.
func TestUnfitTokenNeverLeaves(t *testing.T) {
	const did = "did:plc:ewvi7nxzyoun6zhxrhs64oiz"
	now := time.Now()
	ch, err := NewChallenge("session", now, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	token := jwtWith(`{"scope":"com.atproto.refresh","sub":"` + did + `","exp":9999999999}`)
	v := &Verifier{}
	err = v.Verify(context.Background(), ch, Response{DID: did, Signature: token, Method: "atproto", ChallengeNonce: ch.Nonce}, now)
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "refresh token") {
		t.Fatalf("Verify = %v, want a refusal of the refresh token", err)
	}
	if strings.Contains(err.Error(), token) || strings.Contains(err.Error(), strings.Split(token, ".")[1]) {
		t.Fatalf("the error quotes the token: %v", err)
	}
}

// TestConversationWipesResponses: the buffer that gathered a response's chunks holds none of it
// once the response was taken.
func TestConversationWipesResponses(t *testing.T) {
	c := NewConversation(&Verifier{}, "session", nil)
	now := time.Now()
	if res := c.Handle(context.Background(), Mechanism, now); res.Outcome != OutcomeChallenge {
		t.Fatalf("challenge: %+v", res)
	}
	secret := strings.Repeat("S", ChunkSize)
	c.Handle(context.Background(), secret, now)
	c.Handle(context.Background(), "+", now)
	b := c.buf.Bytes()
	if strings.Contains(string(b[:cap(b)]), "SSSS") {
		t.Fatal("the response stays in the conversation's buffer")
	}
}

// FuzzTokenClaimsProblem: any token gets an answer without a panic, and the answer never quotes
// the token.
func FuzzTokenClaimsProblem(f *testing.F) {
	f.Add(jwtWith(`{"sub":"did:plc:a","exp":1}`))
	f.Add(jwtWith(`{"scope":"com.atproto.refresh"}`))
	f.Add("a.b.c")
	f.Add("opaque")
	f.Fuzz(func(t *testing.T, token string) {
		got := tokenClaimsProblem(token, "did:plc:a", time.Unix(1_800_000_000, 0))
		if len(token) > 8 && strings.Contains(got, token) {
			t.Fatalf("the answer quotes the token: %q", got)
		}
	})
}
