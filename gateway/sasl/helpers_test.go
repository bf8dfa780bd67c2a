package sasl

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"

	"github.com/palaver-chat/palaver/keyresolver"
)

// baseTime is the fixed clock of the tests.
var baseTime = time.Unix(1_750_000_000, 0)

// countingReader is a deterministic "random" source: 0, 1, 2, ...
type countingReader struct{ next byte }

func (r *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = r.next
		r.next++
	}
	return len(p), nil
}

// signer is a test identity: a did:key and a way to sign with its key.
type signer struct {
	did  string
	sign func(msg []byte) []byte
}

func ed25519Signer(t testing.TB, seed byte) signer {
	t.Helper()
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
	mb, err := keyresolver.EncodeMultikey(keyresolver.PublicKey{Type: keyresolver.Ed25519, Raw: priv.Public().(ed25519.PublicKey)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(mb, "z6Mk") {
		t.Fatalf("ed25519 multikey %q lacks the z6Mk prefix", mb)
	}
	return signer{did: "did:key:" + mb, sign: func(msg []byte) []byte { return ed25519.Sign(priv, msg) }}
}

func secp256k1Signer(t testing.TB, seed byte) signer {
	t.Helper()
	priv := secp256k1.PrivKeyFromBytes(bytes.Repeat([]byte{seed}, 32))
	mb, err := keyresolver.EncodeMultikey(keyresolver.PublicKey{Type: keyresolver.Secp256k1, Raw: priv.PubKey().SerializeCompressed()})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(mb, "zQ3s") {
		t.Fatalf("secp256k1 multikey %q lacks the zQ3s prefix", mb)
	}
	return signer{did: "did:key:" + mb, sign: func(msg []byte) []byte { return compactSign(priv, msg) }}
}

// compactSign returns the low-S r||s ECDSA signature over SHA-256(msg).
func compactSign(priv *secp256k1.PrivateKey, msg []byte) []byte {
	digest := sha256.Sum256(msg)
	sig := ecdsa.Sign(priv, digest[:])
	r, s := sig.R(), sig.S()
	out := make([]byte, 64)
	r.PutBytesUnchecked(out[:32])
	s.PutBytesUnchecked(out[32:])
	return out
}

// encodeResponse builds an AUTHENTICATE payload from JSON members.
func encodeResponse(t testing.TB, members map[string]any) string {
	t.Helper()
	data, err := json.Marshal(members)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(data)
}

// signedResponse is the "crypto" answer of s to ch.
func (s signer) signedResponse(t testing.TB, ch Challenge) string {
	return encodeResponse(t, map[string]any{
		"did": s.did, "method": "crypto",
		"signature": base64.RawURLEncoding.EncodeToString(s.sign(ch.JSON)),
	})
}

// parseChallenge recovers a Challenge from its encoded form.
func parseChallenge(t testing.TB, encoded string) Challenge {
	t.Helper()
	data, err := base64.RawURLEncoding.Strict().DecodeString(encoded)
	if err != nil {
		t.Fatalf("challenge %q: %v", encoded, err)
	}
	var fields challengeJSON
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatalf("challenge JSON %s: %v", data, err)
	}
	return Challenge{JSON: data, SessionID: fields.SessionID, Nonce: fields.Nonce, Timestamp: fields.Timestamp}
}

// paddedResponse is a response whose encoded form is exactly n bytes long
// (n a multiple of 4), made so by an ignored "pad" member.
func paddedResponse(t testing.TB, members map[string]any, n int) string {
	t.Helper()
	if n%4 != 0 {
		t.Fatalf("length %d is not a multiple of 4", n)
	}
	want := n / 4 * 3
	members["pad"] = ""
	data, _ := json.Marshal(members)
	if len(data) > want {
		t.Fatalf("response already %d bytes, over %d", len(data), want)
	}
	members["pad"] = strings.Repeat("x", want-len(data))
	out := encodeResponse(t, members)
	if len(out) != n {
		t.Fatalf("padded response is %d bytes, want %d", len(out), n)
	}
	return out
}

func chunks(s string, size int) []string {
	var out []string
	for len(s) > size {
		out = append(out, s[:size])
		s = s[size:]
	}
	return append(out, s)
}
