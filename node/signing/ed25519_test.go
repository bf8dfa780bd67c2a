package signing

import (
	"crypto/ed25519"
	"crypto/sha512"
	"encoding/hex"
	"math/big"
	"testing"

	"github.com/oasisprotocol/curve25519-voi/curve"
	"github.com/oasisprotocol/curve25519-voi/curve/scalar"
	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// l is the order of the ed25519 base point.
var l, _ = new(big.Int).SetString("7237005577332262213973186563042994763689999548812185815221540085226757136421", 10)

// addL returns sig with L added to its S half (little-endian): the same
// point equation, a non-canonical S that crypto/ed25519 refuses.
func addL(sig []byte) []byte {
	s := make([]byte, 32)
	for i := range s {
		s[i] = sig[63-i]
	}
	n := new(big.Int).Add(new(big.Int).SetBytes(s), l)
	be := n.FillBytes(make([]byte, 32))
	out := append([]byte{}, sig[:32]...)
	for i := range be {
		out = append(out, be[31-i])
	}
	return out
}

// torsionSig is what the holder of seed can sign so that R carries an order-8
// component: R' = rB + T, S = r + H(R' ‖ A ‖ msg)·a. The cofactored equation
// (ZIP-215, batch verifiers) accepts it; crypto/ed25519's cofactorless one
// does not, so a verifier that batched signatures would change verdicts.
func torsionSig(t *testing.T, seed, msg []byte) []byte {
	t.Helper()
	priv := ed25519.NewKeyFromSeed(seed)
	h := sha512.Sum512(seed)
	h[0] &= 248
	h[31] &= 127
	h[31] |= 64
	a, err := scalar.New().SetBits(h[:32])
	if err != nil {
		t.Fatal(err)
	}
	r := scalar.New().SetUint64(5) // any nonce
	var rB, torsion, rPrime curve.EdwardsPoint
	rB.MulBasepoint(curve.ED25519_BASEPOINT_TABLE, r)
	order8, err := curve.NewCompressedEdwardsYFromBytes(mustHex(t, "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := torsion.SetCompressedY(order8); err != nil {
		t.Fatal(err)
	}
	rPrime.Add(&rB, &torsion)
	var enc curve.CompressedEdwardsY
	enc.SetEdwardsPoint(&rPrime)
	d := sha512.New()
	d.Write(enc[:])
	d.Write(priv.Public().(ed25519.PublicKey))
	d.Write(msg)
	k, err := scalar.New().SetBytesModOrderWide(d.Sum(nil))
	if err != nil {
		t.Fatal(err)
	}
	sum := scalar.New().Mul(k, a)
	sum.Add(sum, r)
	sig := append([]byte{}, enc[:]...)
	sig = append(sig, make([]byte, 32)...)
	if err := sum.ToBytes(sig[32:]); err != nil {
		t.Fatal(err)
	}
	cofactored := &voi.Options{Verify: voi.VerifyOptionsDefault}
	if !voi.VerifyWithOptions(voi.PublicKey(priv.Public().(ed25519.PublicKey)), msg, sig, cofactored) {
		t.Fatal("the torsion signature does not pass the cofactored check it was made for")
	}
	return sig
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEd25519VerifyAgreesWithTheStandardLibrary holds the fast paths
// (Ed25519Verify, Ed25519VerifyOnce) to crypto/ed25519's verdict on the inputs where ed25519 implementations
// differ: non-canonical S, small-order and non-canonical keys and R,
// malformed lengths.
func TestEd25519VerifyAgreesWithTheStandardLibrary(t *testing.T) {
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = 7
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	msg := []byte(`{"body":"sha256:00","from":"did:plc:x","msgid":"01J","target":"#c"}`)
	sig := ed25519.Sign(priv, msg)
	identity := mustHex(t, "0100000000000000000000000000000000000000000000000000000000000000")
	// y = p (non-canonical encoding of y = 0, a point of order 4).
	nonCanonicalKey := mustHex(t, "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")
	zeroSig := make([]byte, 64)
	identityR := append(append([]byte{}, identity...), make([]byte, 32)...)
	flipped := append([]byte{}, sig...)
	flipped[10] ^= 1

	tests := []struct {
		name string
		pub  []byte
		msg  []byte
		sig  []byte
	}{
		{"valid", pub, msg, sig},
		{"other message", pub, []byte("other"), sig},
		{"flipped bit in R", pub, msg, flipped},
		{"non-canonical S (S+L)", pub, msg, addL(sig)},
		{"identity key, zero signature", identity, msg, zeroSig},
		{"identity key, identity R, S=0", identity, msg, identityR},
		{"non-canonical small-order key", nonCanonicalKey, msg, identityR},
		{"key that is not a point", mustHex(t, "0200000000000000000000000000000000000000000000000000000000000000"), msg, sig},
		{"short signature", pub, msg, sig[:63]},
		{"long signature", pub, msg, append(append([]byte{}, sig...), 0)},
		{"empty message", pub, nil, ed25519.Sign(priv, nil)},
		{"R with an order-8 component (valid only cofactored)", pub, msg, torsionSig(t, seed, msg)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := len(tt.sig) == ed25519.SignatureSize && ed25519.Verify(tt.pub, tt.msg, tt.sig)
			for range 2 { // the second call reads the cached expansion
				if got := Ed25519Verify(tt.pub, tt.msg, tt.sig); got != want {
					t.Fatalf("Ed25519Verify = %v, crypto/ed25519 = %v", got, want)
				}
			}
			if got := Ed25519VerifyOnce(tt.pub, tt.msg, tt.sig); got != want {
				t.Fatalf("Ed25519VerifyOnce = %v, crypto/ed25519 = %v", got, want)
			}
		})
	}
	if Ed25519Verify(pub[:31], msg, sig) || Ed25519VerifyOnce(pub[:31], msg, sig) {
		t.Error("a 31-byte key verified")
	}
}

// FuzzEd25519Verify compares the fast path with crypto/ed25519 on valid
// signatures with fuzzed bytes flipped in the key, the message or the
// signature, and on raw fuzzed keys and signatures.
func FuzzEd25519Verify(f *testing.F) {
	f.Add([]byte("seed"), []byte("message"), uint16(0), byte(0), []byte{}, []byte{})
	f.Add([]byte("seed"), []byte("message"), uint16(40), byte(1), []byte{}, []byte{})
	f.Add([]byte("x"), []byte(""), uint16(100), byte(0x80), make([]byte, 32), make([]byte, 64))
	f.Fuzz(func(t *testing.T, seedBytes, msg []byte, at uint16, flip byte, rawPub, rawSig []byte) {
		seed := make([]byte, ed25519.SeedSize)
		copy(seed, seedBytes)
		priv := ed25519.NewKeyFromSeed(seed)
		pub := append([]byte{}, priv.Public().(ed25519.PublicKey)...)
		sig := ed25519.Sign(priv, msg)
		// Flip one byte somewhere in key ‖ signature ‖ message.
		switch i := int(at) % (32 + 64 + len(msg) + 1); {
		case i < 32:
			pub[i] ^= flip
		case i < 96:
			sig[i-32] ^= flip
		case i < 96+len(msg):
			msg = append([]byte{}, msg...)
			msg[i-96] ^= flip
		}
		want := ed25519.Verify(pub, msg, sig)
		if got := Ed25519Verify(pub, msg, sig); got != want {
			t.Fatalf("flipped: Ed25519Verify = %v, crypto/ed25519 = %v", got, want)
		}
		if got := Ed25519VerifyOnce(pub, msg, sig); got != want {
			t.Fatalf("flipped: Ed25519VerifyOnce = %v, crypto/ed25519 = %v", got, want)
		}
		if len(rawPub) == ed25519.PublicKeySize && len(rawSig) == ed25519.SignatureSize {
			want := ed25519.Verify(rawPub, msg, rawSig)
			if got := Ed25519Verify(rawPub, msg, rawSig); got != want {
				t.Fatalf("raw: Ed25519Verify = %v, crypto/ed25519 = %v", got, want)
			}
			if got := Ed25519VerifyOnce(rawPub, msg, rawSig); got != want {
				t.Fatalf("raw: Ed25519VerifyOnce = %v, crypto/ed25519 = %v", got, want)
			}
		}
	})
}

func BenchmarkEd25519Verify(b *testing.B) {
	priv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	pub := priv.Public().(ed25519.PublicKey)
	msg := make([]byte, 300)
	sig := ed25519.Sign(priv, msg)
	b.Run("crypto/ed25519", func(b *testing.B) {
		for b.Loop() {
			ed25519.Verify(pub, msg, sig)
		}
	})
	b.Run("Ed25519Verify, cached key", func(b *testing.B) {
		for b.Loop() {
			Ed25519Verify(pub, msg, sig)
		}
	})
	b.Run("Ed25519VerifyOnce", func(b *testing.B) {
		for b.Loop() {
			Ed25519VerifyOnce(pub, msg, sig)
		}
	})
}
