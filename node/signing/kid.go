package signing

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
)

// kidBytes is how much of SHA-256(public key) a key id keeps.
const kidBytes = 16

// b64 is base64url without padding, strict about trailing bits, as every
// key, key id and signature on the wire is written.
var b64 = base64.RawURLEncoding.Strict()

// KID returns the self-certifying key id of an ed25519 public key:
// base64url-nopad(SHA-256(pub)[0:16]), always 22 characters.
func KID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return b64.EncodeToString(sum[:kidBytes])
}

// EncodePublicKey writes a public key as base64url without padding.
func EncodePublicKey(pub ed25519.PublicKey) string {
	return b64.EncodeToString(pub)
}

// ParsePublicKey reads a base64url public key (padding tolerated, as some
// exporters write it) and checks that it is 32 bytes.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	raw, err := decodeB64URL(strings.TrimRight(s, "="))
	if err != nil {
		return nil, fmt.Errorf("signing: public key: %w", err)
	}
	if len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("signing: public key is %d bytes, want %d", len(raw), ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(raw), nil
}

// decodeB64URL decodes strict base64url-nopad. The standard decoder skips
// CR and LF, so they are refused here first: one value has one spelling.
func decodeB64URL(s string) ([]byte, error) {
	if strings.ContainsAny(s, "\r\n") {
		return nil, fmt.Errorf("base64url contains a line break")
	}
	raw, err := b64.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("bad base64url: %w", err)
	}
	return raw, nil
}

// Keys is a set of public keys indexed by key id. Its Lookup method is the
// lookup function Verify takes.
type Keys map[string]ed25519.PublicKey

// Add files pub under its own key id.
func (k Keys) Add(pub ed25519.PublicKey) {
	k[KID(pub)] = pub
}

// Lookup returns the key filed under kid.
func (k Keys) Lookup(kid string) (ed25519.PublicKey, bool) {
	pub, ok := k[kid]
	return pub, ok
}
