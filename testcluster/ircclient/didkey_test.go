package ircclient

import (
	"crypto/ed25519"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

func TestDIDKeyGolden(t *testing.T) {
	// The all-zero ed25519 seed is the did:key specification's first
	// test vector.
	edPub := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public().(ed25519.PublicKey)
	// secp256k1 private key 1: the public key is the generator point G.
	var one [32]byte
	one[31] = 1
	secpPub := secp256k1.PrivKeyFromBytes(one[:]).PubKey()

	tests := []struct {
		name, got, want string
	}{
		{"ed25519 zero seed", DIDKeyEd25519(edPub), "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp"},
		{"ed25519 signer", NewEd25519Signer(ed25519.NewKeyFromSeed(make([]byte, 32))).DID(), "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp"},
		{"secp256k1 generator", DIDKeySecp256k1(secpPub), "did:key:zQ3shVc2UkAfJCdc1TR8E66J85h48P43r93q8jGPkPpjF9Ef9"},
		{"secp256k1 signer", NewSecp256k1Signer(secp256k1.PrivKeyFromBytes(one[:])).DID(), "did:key:zQ3shVc2UkAfJCdc1TR8E66J85h48P43r93q8jGPkPpjF9Ef9"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
