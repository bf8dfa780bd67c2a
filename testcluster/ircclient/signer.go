package ircclient

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
)

// Signer proves control of a DID by signing SASL challenges.
type Signer interface {
	DID() string
	Sign(msg []byte) ([]byte, error)
}

type ed25519Signer struct {
	priv ed25519.PrivateKey
	did  string
}

// NewEd25519Signer returns a Signer for did:key:z6Mk... that signs with pure
// Ed25519 (RFC 8032). A key of the wrong length yields a Signer whose DID is
// "" and whose Sign fails.
func NewEd25519Signer(priv ed25519.PrivateKey) Signer {
	s := &ed25519Signer{priv: priv}
	if len(priv) == ed25519.PrivateKeySize {
		s.did = DIDKeyEd25519(priv.Public().(ed25519.PublicKey))
	}
	return s
}

func (s *ed25519Signer) DID() string { return s.did }

func (s *ed25519Signer) Sign(msg []byte) ([]byte, error) {
	if len(s.priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("ircclient: ed25519 private key has %d bytes, want %d", len(s.priv), ed25519.PrivateKeySize)
	}
	return ed25519.Sign(s.priv, msg), nil
}

type secp256k1Signer struct {
	priv *secp256k1.PrivateKey
	did  string
}

// NewSecp256k1Signer returns a Signer for did:key:zQ3s... that signs with
// ECDSA over SHA-256(msg), producing the 64-byte compact r||s form with a
// low S, as the verifiers behind atproto require.
func NewSecp256k1Signer(priv *secp256k1.PrivateKey) Signer {
	return &secp256k1Signer{priv: priv, did: DIDKeySecp256k1(priv.PubKey())}
}

func (s *secp256k1Signer) DID() string { return s.did }

func (s *secp256k1Signer) Sign(msg []byte) ([]byte, error) {
	hash := sha256.Sum256(msg)
	sig := ecdsa.Sign(s.priv, hash[:])
	r, sv := sig.R(), sig.S()
	if sv.IsOverHalfOrder() { // ecdsa.Sign already normalises; keep the guarantee local
		sv.Negate()
	}
	out := make([]byte, 64)
	rb, sb := r.Bytes(), sv.Bytes()
	copy(out[:32], rb[:])
	copy(out[32:], sb[:])
	return out, nil
}
