package signing

import (
	"bytes"
	"crypto/ed25519"
	"testing"
)

// testKey derives a deterministic key pair from one repeated byte.
func testKey(b byte) (ed25519.PrivateKey, ed25519.PublicKey) {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, ed25519.SeedSize))
	return priv, priv.Public().(ed25519.PublicKey)
}

func mustChannel(t testing.TB, name string) Venue {
	t.Helper()
	v, err := ChannelVenue(name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustCanonical(t testing.TB, doc Document) []byte {
	t.Helper()
	out, err := doc.Canonical()
	if err != nil {
		t.Fatalf("Canonical: %v", err)
	}
	return out
}
