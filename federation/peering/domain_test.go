package peering

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"
	"time"
)

// TestBatchSignatureIsDomainSeparated: an envelope's signature covers the batch purpose prefix,
// so it is no signature of the bare payload; receivers still take the unprefixed form for now.
func TestBatchSignatureIsDomainSeparated(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	body, err := Seal(key, Batch{From: "did:web:a.example", To: "did:web:b.example", Seq: 1, SentAt: time.Now().Unix()})
	if err != nil {
		t.Fatal(err)
	}
	_, payload, tag, err := ParseEnvelope(body)
	if err != nil {
		t.Fatal(err)
	}
	if ed25519.Verify(pub, payload, tag.Signature) {
		t.Fatal("the envelope signature verifies over the bare payload: no purpose prefix")
	}
	if !ed25519.Verify(pub, batchSigningInput(payload), tag.Signature) {
		t.Fatal("the envelope signature does not cover the prefixed payload")
	}
	tests := []struct {
		name string
		sig  []byte
		want bool
	}{
		{"sealed", tag.Signature, true},
		{"unprefixed, from a peer not updated yet", ed25519.Sign(key, payload), true},
		{"another purpose's prefix", ed25519.Sign(key, append([]byte("palaver evidence bundle v1\n"), payload...)), false},
		{"another key", ed25519.Sign(func() ed25519.PrivateKey { _, k, _ := ed25519.GenerateKey(rand.Reader); return k }(), batchSigningInput(payload)), false},
	}
	for _, tt := range tests {
		if got := verifyBatchSignature(pub, payload, tt.sig); got != tt.want {
			t.Errorf("%s: verifyBatchSignature = %v, want %v", tt.name, got, tt.want)
		}
	}
}
