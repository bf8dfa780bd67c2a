package signing

import (
	"crypto/ed25519"
	"testing"
)

// TestSignNamesEachKey: Sign remembers the last key's id; signing with one key, another and the
// first again names and verifies each, and writes the tag FormatSigTag writes.
func TestSignNamesEachKey(t *testing.T) {
	priv1, pub1 := testKey(1)
	priv2, pub2 := testKey(2)
	canon := []byte(`{"body":"x"}`)
	for i, tc := range []struct {
		priv ed25519.PrivateKey
		pub  ed25519.PublicKey
	}{{priv1, pub1}, {priv2, pub2}, {priv1, pub1}, {priv1, pub1}, {priv2, pub2}} {
		tag := Sign(tc.priv, canon)
		if want := FormatSigTag(KID(tc.pub), ed25519.Sign(tc.priv, canon)); tag != want {
			t.Fatalf("signature %d: %q, want %q", i, tag, want)
		}
		keys := Keys{}
		keys.Add(tc.pub)
		if verdict, reason := Verify(canon, tag, keys.Lookup); verdict != Valid {
			t.Fatalf("signature %d: %v (%s)", i, verdict, reason)
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Sign accepted a 32-byte key")
		}
	}()
	Sign(priv1[:32], canon)
}
