package load

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// Curve is the key type of the did:key identities a login storm uses.
type Curve string

// The supported curves.
const (
	CurveEd25519   Curve = "ed25519"   // did:key:z6Mk..., pure Ed25519
	CurveSecp256k1 Curve = "secp256k1" // did:key:zQ3s..., ECDSA over SHA-256 with low S
)

// ParseCurve accepts "ed25519" and "secp256k1" (also "k256").
func ParseCurve(s string) (Curve, error) {
	switch strings.ToLower(s) {
	case "ed25519":
		return CurveEd25519, nil
	case "secp256k1", "k256":
		return CurveSecp256k1, nil
	}
	return "", fmt.Errorf("load: unknown curve %q (want ed25519 or secp256k1)", s)
}

// GenerateSigners makes n fresh did:key identities of the given curve.
func GenerateSigners(curve Curve, n int) ([]ircclient.Signer, error) {
	out := make([]ircclient.Signer, n)
	for i := range out {
		switch curve {
		case CurveEd25519:
			_, priv, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				return nil, fmt.Errorf("load: generating an ed25519 key: %w", err)
			}
			out[i] = ircclient.NewEd25519Signer(priv)
		case CurveSecp256k1:
			priv, err := secp256k1.GeneratePrivateKey()
			if err != nil {
				return nil, fmt.Errorf("load: generating a secp256k1 key: %w", err)
			}
			out[i] = ircclient.NewSecp256k1Signer(priv)
		default:
			return nil, fmt.Errorf("load: unknown curve %q", curve)
		}
	}
	return out, nil
}
