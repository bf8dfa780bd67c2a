package signing

import (
	"crypto/ed25519"
	"sync"

	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// Ed25519Verify reports whether sig is pub's signature of msg, with exactly
// the rules of crypto/ed25519.Verify (cofactorless, small-order and
// non-canonical keys accepted, S < L required) — the differential tests and
// fuzz target hold it to that — but about twice as fast for a key seen
// before: it verifies with curve25519-voi against the key's precomputed
// expansion, kept in a bounded process-wide cache. Session keys sign many
// messages, so the expansion is paid once per key. A key of the wrong
// length does not verify (crypto/ed25519 would panic).
//
// The cache is the one piece of package state: it holds only public keys'
// expansions, derived deterministically, so sharing it cannot change a
// verdict.
func Ed25519Verify(pub ed25519.PublicKey, msg, sig []byte) bool {
	if len(pub) != ed25519.PublicKeySize || len(sig) != ed25519.SignatureSize {
		return false
	}
	x := expandedKeys.get(pub)
	if x == nil {
		// A point that does not decode: crypto/ed25519 refuses it too.
		return false
	}
	return voi.VerifyExpandedWithOptions(x, msg, sig, stdLibOptions)
}

var stdLibOptions = &voi.Options{Verify: voi.VerifyOptionsStdLib}

// Ed25519VerifyOnce is Ed25519Verify for a key that is not expected to sign
// again soon, a SASL login's proof say: the same verdicts, from
// curve25519-voi without the key's expansion, so such keys neither pay for
// one nor push the keys that sign many messages out of the cache.
func Ed25519VerifyOnce(pub ed25519.PublicKey, msg, sig []byte) bool {
	if len(pub) != ed25519.PublicKeySize || len(sig) != ed25519.SignatureSize {
		return false
	}
	return voi.VerifyWithOptions(voi.PublicKey(pub), msg, sig, stdLibOptions)
}

// expandedKeyCacheSize bounds the cached expansions (about 1 KB each).
const expandedKeyCacheSize = 4096

var expandedKeys = &expandedKeyCache{keys: make(map[[ed25519.PublicKeySize]byte]*voi.ExpandedPublicKey)}

// expandedKeyCache maps public keys to their expansions; when full it is
// emptied and refills with the keys in use.
type expandedKeyCache struct {
	mu   sync.RWMutex
	keys map[[ed25519.PublicKeySize]byte]*voi.ExpandedPublicKey
}

func (c *expandedKeyCache) get(pub ed25519.PublicKey) *voi.ExpandedPublicKey {
	k := [ed25519.PublicKeySize]byte(pub)
	c.mu.RLock()
	x, ok := c.keys[k]
	c.mu.RUnlock()
	if ok {
		return x
	}
	x, err := voi.NewExpandedPublicKey(voi.PublicKey(pub))
	if err != nil {
		x = nil // remembered: it will not decode next time either
	}
	c.mu.Lock()
	if len(c.keys) >= expandedKeyCacheSize {
		clear(c.keys)
	}
	c.keys[k] = x
	c.mu.Unlock()
	return x
}
