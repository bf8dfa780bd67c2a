package keyresolver

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
	"github.com/mr-tron/base58"
)

// KeyType names a public key algorithm.
type KeyType int

// The supported key types. Do not reorder: the values may be stored.
const (
	Ed25519 KeyType = iota
	Secp256k1
)

// String returns the algorithm's short name.
func (t KeyType) String() string {
	switch t {
	case Ed25519:
		return "ed25519"
	case Secp256k1:
		return "secp256k1"
	default:
		return fmt.Sprintf("KeyType(%d)", int(t))
	}
}

// PublicKey is a verification key taken from a DID document or a did:key.
type PublicKey struct {
	ID   string  // the verification method id ("did:...#frag"); empty from ParseMultikey
	Type KeyType // which algorithm Raw is for; a key is only ever used with its own algorithm
	Raw  []byte  // 32 bytes for ed25519, 33 bytes compressed SEC1 for secp256k1
	// secpPoint is Raw decompressed, kept by ParseMultikey so that Verify
	// does not decompress it again (a field square root, ~30 µs).
	secpPoint *secp256k1.PublicKey
}

// Multicodec prefixes (unsigned varints) of the key types, and key sizes.
var (
	ed25519Multicodec   = []byte{0xed, 0x01}
	secp256k1Multicodec = []byte{0xe7, 0x01}
)

const (
	secp256k1CompressedLength = 33
	compactSignatureLength    = 64
	// maxMultikeyLength bounds the base58 text before decoding (decoding is
	// quadratic); the longest supported key is 35 bytes, about 48 characters.
	maxMultikeyLength = 128
)

// ParseMultikey decodes a multibase base58btc ("z"-prefixed) multicodec key:
// 0xed01 followed by a 32-byte ed25519 key, or 0xe701 followed by a 33-byte
// compressed secp256k1 point (which must lie on the curve).
func ParseMultikey(mb string) (PublicKey, error) {
	if len(mb) > maxMultikeyLength {
		return PublicKey{}, fmt.Errorf("keyresolver: multikey longer than %d characters", maxMultikeyLength)
	}
	encoded, ok := strings.CutPrefix(mb, "z")
	if !ok {
		return PublicKey{}, fmt.Errorf("keyresolver: multikey %q is not base58btc multibase (prefix z)", mb)
	}
	raw, err := base58.Decode(encoded)
	if err != nil {
		return PublicKey{}, fmt.Errorf("keyresolver: multikey base58: %w", err)
	}
	if len(raw) < 2 {
		return PublicKey{}, fmt.Errorf("keyresolver: multikey too short")
	}
	prefix, key := raw[:2], raw[2:]
	switch {
	case prefix[0] == ed25519Multicodec[0] && prefix[1] == ed25519Multicodec[1]:
		if len(key) != ed25519.PublicKeySize {
			return PublicKey{}, fmt.Errorf("keyresolver: ed25519 multikey has %d key bytes, want %d", len(key), ed25519.PublicKeySize)
		}
		return PublicKey{Type: Ed25519, Raw: key}, nil
	case prefix[0] == secp256k1Multicodec[0] && prefix[1] == secp256k1Multicodec[1]:
		if len(key) != secp256k1CompressedLength {
			return PublicKey{}, fmt.Errorf("keyresolver: secp256k1 multikey has %d key bytes, want %d", len(key), secp256k1CompressedLength)
		}
		if key[0] != 0x02 && key[0] != 0x03 {
			return PublicKey{}, fmt.Errorf("keyresolver: secp256k1 multikey is not a compressed point")
		}
		point, err := secp256k1.ParsePubKey(key)
		if err != nil {
			return PublicKey{}, fmt.Errorf("keyresolver: secp256k1 multikey: %w", err)
		}
		return PublicKey{Type: Secp256k1, Raw: key, secpPoint: point}, nil
	default:
		return PublicKey{}, fmt.Errorf("keyresolver: unsupported multicodec prefix %x", prefix)
	}
}

// EncodeMultikey is the inverse of ParseMultikey: "z" + base58btc(multicodec || key).
func EncodeMultikey(k PublicKey) (string, error) {
	var prefix []byte
	switch k.Type {
	case Ed25519:
		if len(k.Raw) != ed25519.PublicKeySize {
			return "", fmt.Errorf("keyresolver: ed25519 key has %d bytes", len(k.Raw))
		}
		prefix = ed25519Multicodec
	case Secp256k1:
		if len(k.Raw) != secp256k1CompressedLength {
			return "", fmt.Errorf("keyresolver: secp256k1 key has %d bytes", len(k.Raw))
		}
		prefix = secp256k1Multicodec
	default:
		return "", fmt.Errorf("keyresolver: cannot encode %v", k.Type)
	}
	return "z" + base58.Encode(append(append([]byte{}, prefix...), k.Raw...)), nil
}

// Verify reports whether sig is k's signature over msg.
//
// ed25519: pure Ed25519 (RFC 8032), 64-byte signature.
// secp256k1: ECDSA over SHA-256(msg), 64-byte compact r||s (never DER);
// r and s must be in [1, N-1] and s must be low (s <= N/2): high-S
// signatures are rejected, as the k256 verifier behind freeq does.
// A key is only ever tried under its own algorithm.
func (k PublicKey) Verify(msg, sig []byte) bool {
	switch k.Type {
	case Ed25519:
		if len(k.Raw) != ed25519.PublicKeySize || len(sig) != ed25519.SignatureSize {
			return false
		}
		return ed25519.Verify(ed25519.PublicKey(k.Raw), msg, sig)
	case Secp256k1:
		return verifySecp256k1(k.Raw, k.secpPoint, msg, sig)
	default:
		return false
	}
}

// verifySecp256k1 checks sig with rawKey, decompressed as pub when the
// caller has it (nil: decompressed here).
func verifySecp256k1(rawKey []byte, pub *secp256k1.PublicKey, msg, sig []byte) bool {
	if len(rawKey) != secp256k1CompressedLength || len(sig) != compactSignatureLength {
		return false
	}
	if pub == nil {
		var err error
		if pub, err = secp256k1.ParsePubKey(rawKey); err != nil {
			return false
		}
	}
	var r, s secp256k1.ModNScalar
	if overflow := r.SetByteSlice(sig[:32]); overflow || r.IsZero() {
		return false
	}
	if overflow := s.SetByteSlice(sig[32:]); overflow || s.IsZero() || s.IsOverHalfOrder() {
		return false
	}
	digest := sha256.Sum256(msg)
	return ecdsa.NewSignature(&r, &s).Verify(digest[:], pub)
}
