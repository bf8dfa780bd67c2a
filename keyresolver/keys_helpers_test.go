package keyresolver

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
)

// testEd25519 mints a deterministic ed25519 key pair from one seed byte.
func testEd25519(seed byte) (ed25519.PrivateKey, PublicKey) {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
	return priv, PublicKey{Type: Ed25519, Raw: priv.Public().(ed25519.PublicKey)}
}

// testSecp256k1 mints a deterministic secp256k1 key pair from one seed byte.
func testSecp256k1(seed byte) (*secp256k1.PrivateKey, PublicKey) {
	priv := secp256k1.PrivKeyFromBytes(bytes.Repeat([]byte{seed}, 32))
	return priv, PublicKey{Type: Secp256k1, Raw: priv.PubKey().SerializeCompressed()}
}

// signSecp256k1 returns the low-S compact r||s signature over SHA-256(msg).
func signSecp256k1(priv *secp256k1.PrivateKey, msg []byte) []byte {
	digest := sha256.Sum256(msg)
	sig := ecdsa.Sign(priv, digest[:])
	r, s := sig.R(), sig.S()
	var out [64]byte
	r.PutBytesUnchecked(out[:32])
	s.PutBytesUnchecked(out[32:])
	return out[:]
}

// highS turns a compact signature into its high-S twin (s → N − s), which is
// equally valid as plain ECDSA but must be rejected.
func highS(t *testing.T, sig []byte) []byte {
	t.Helper()
	var s secp256k1.ModNScalar
	if s.SetByteSlice(sig[32:]) {
		t.Fatal("s overflows")
	}
	s.Negate()
	if !s.IsOverHalfOrder() {
		t.Fatal("negated s is not high")
	}
	out := append([]byte(nil), sig...)
	s.PutBytesUnchecked(out[32:])
	return out
}

func mustMultikey(t testing.TB, k PublicKey) string {
	t.Helper()
	mb, err := EncodeMultikey(k)
	if err != nil {
		t.Fatal(err)
	}
	return mb
}

func edPrivSign(priv ed25519.PrivateKey, msg []byte) []byte { return ed25519.Sign(priv, msg) }

func sha256Sum(msg []byte) []byte {
	d := sha256.Sum256(msg)
	return d[:]
}
