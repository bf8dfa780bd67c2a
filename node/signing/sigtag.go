package signing

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
)

// AlgorithmEd25519 is the only signature algorithm this package checks.
const AlgorithmEd25519 = "ed25519"

// Errors from ParseSigTag. Each one makes a signature unverifiable, never
// invalid.
var (
	// ErrLegacyFormat: a bare base64 blob with no algorithm or kid (freeq's
	// first format, over did\0target\0text\0timestamp).
	ErrLegacyFormat = errors.New("legacy sig format")
	// ErrUnknownAlgorithm: an algorithm other than ed25519.
	ErrUnknownAlgorithm = errors.New("unknown sig algorithm")
	// ErrMalformedTag: not kid-shaped, bad base64, or not a 64-byte signature.
	ErrMalformedTag = errors.New("malformed sig tag")
)

// SigTag is a parsed `ed25519:<kid>:<signature>` tag value.
type SigTag struct {
	Algorithm string
	KID       string
	Signature []byte
}

// FormatSigTag writes `ed25519:<kid>:<base64url-nopad sig>`.
func FormatSigTag(kid string, sig []byte) string {
	return AlgorithmEd25519 + ":" + kid + ":" + b64.EncodeToString(sig)
}

// String writes the tag value back in wire form.
func (t SigTag) String() string {
	return t.Algorithm + ":" + t.KID + ":" + b64.EncodeToString(t.Signature)
}

// ParseSigTag parses a sig tag value, splitting on the first two colons.
// Errors wrap ErrLegacyFormat, ErrUnknownAlgorithm or ErrMalformedTag.
func ParseSigTag(v string) (SigTag, error) {
	alg, rest, found := strings.Cut(v, ":")
	if !found {
		return SigTag{}, fmt.Errorf("signing: %w", ErrLegacyFormat)
	}
	if alg == "" {
		return SigTag{}, fmt.Errorf("signing: %w: empty algorithm", ErrMalformedTag)
	}
	if alg != AlgorithmEd25519 {
		return SigTag{}, fmt.Errorf("signing: %w %q", ErrUnknownAlgorithm, truncate(alg))
	}
	kid, sigText, found := strings.Cut(rest, ":")
	if !found {
		return SigTag{}, fmt.Errorf("signing: %w: no signature after the kid", ErrMalformedTag)
	}
	if !validKID(kid) {
		return SigTag{}, fmt.Errorf("signing: %w: kid %q is not 16 bytes of base64url", ErrMalformedTag, truncate(kid))
	}
	sig, err := decodeB64URL(sigText)
	if err != nil {
		return SigTag{}, fmt.Errorf("signing: %w: signature: %w", ErrMalformedTag, err)
	}
	if len(sig) != ed25519.SignatureSize {
		return SigTag{}, fmt.Errorf("signing: %w: signature is %d bytes, want %d", ErrMalformedTag, len(sig), ed25519.SignatureSize)
	}
	return SigTag{Algorithm: alg, KID: kid, Signature: sig}, nil
}

// validKID reports whether kid is base64url-nopad of exactly 16 bytes.
func validKID(kid string) bool {
	if len(kid) != b64.EncodedLen(kidBytes) {
		return false
	}
	raw, err := decodeB64URL(kid)
	return err == nil && len(raw) == kidBytes
}

// Sign signs the canonical bytes and returns the sig tag value. It panics, as
// crypto/ed25519 does, if priv is not a 64-byte private key.
func Sign(priv ed25519.PrivateKey, canonical []byte) string {
	if len(priv) != ed25519.PrivateKeySize {
		panic("signing: private key has no ed25519 public half")
	}
	sig := ed25519.Sign(priv, canonical)
	kid := signerKID(priv[ed25519.SeedSize:])
	out := make([]byte, 0, len(AlgorithmEd25519)+len(kid)+2+b64.EncodedLen(ed25519.SignatureSize))
	out = append(append(append(append(out, AlgorithmEd25519...), ':'), kid...), ':')
	return string(b64.AppendEncode(out, sig))
}

// lastSigner is the key id of the last key Sign used: a node signs with its one server key, whose
// id need not be hashed again for every message.
var lastSigner atomic.Pointer[signerID]

type signerID struct {
	pub [ed25519.PublicKeySize]byte
	kid string
}

func signerKID(pub []byte) string {
	if id := lastSigner.Load(); id != nil && bytes.Equal(id.pub[:], pub) {
		return id.kid
	}
	id := &signerID{pub: [ed25519.PublicKeySize]byte(pub), kid: KID(pub)}
	lastSigner.Store(id)
	return id.kid
}

// truncate keeps error messages short when they quote wire data.
func truncate(s string) string {
	const limit = 32
	if len(s) > limit {
		return s[:limit] + "…"
	}
	return s
}
