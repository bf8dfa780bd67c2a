package signing

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"sync"
)

// VerifyCache remembers the outcome of ed25519 signature checks, so that a message whose
// signature is checked again and again (GET /api/v1/verify of a popular message, B7) costs a
// SHA-256 of the bytes instead of a verification (about 50 µs). Only the arithmetic is remembered,
// keyed by a digest of the public key, the signature and the canonical bytes: the key lookup, and
// with it everything that depends on state (a key retired or expired since, a kid that no longer
// resolves), runs on every call, so VerifyCache.Verify answers exactly as Verify does.
//
// It holds at most the number of entries given to NewVerifyCache and starts over when full. It is
// safe for concurrent use.
type VerifyCache struct {
	mu      sync.Mutex
	max     int
	results map[[sha256.Size]byte]bool
}

// NewVerifyCache returns a cache of at most size remembered checks (at least 1).
func NewVerifyCache(size int) *VerifyCache {
	return &VerifyCache{max: max(1, size), results: make(map[[sha256.Size]byte]bool)}
}

// Verify is Verify with the signature check remembered.
func (vc *VerifyCache) Verify(canonical []byte, tagValue string, lookup KeyLookup) (Verdict, Reason) {
	return verify(canonical, tagValue, lookup, vc.check)
}

// VerifyDocument is VerifyDocument with the signature check remembered.
func (vc *VerifyCache) VerifyDocument(doc Document, tagValue string, lookup KeyLookup) (Verdict, Reason) {
	if tagValue == "" {
		return Unverifiable, ReasonUnsigned
	}
	canonical, err := doc.Canonical()
	if err != nil {
		return Unverifiable, documentReason(err)
	}
	return vc.Verify(canonical, tagValue, lookup)
}

func (vc *VerifyCache) check(pub ed25519.PublicKey, msg, sig []byte) bool {
	key := checkDigest(pub, msg, sig)
	vc.mu.Lock()
	ok, known := vc.results[key]
	vc.mu.Unlock()
	if known {
		return ok
	}
	ok = Ed25519Verify(pub, msg, sig)
	vc.mu.Lock()
	if len(vc.results) >= vc.max {
		clear(vc.results)
	}
	vc.results[key] = ok
	vc.mu.Unlock()
	return ok
}

// checkDigest names one check: the key's and the signature's lengths go first, so the
// concatenation is unambiguous whatever lengths a malformed input has.
func checkDigest(pub ed25519.PublicKey, msg, sig []byte) [sha256.Size]byte {
	h := sha256.New()
	var lengths [16]byte
	binary.BigEndian.PutUint64(lengths[:8], uint64(len(pub)))
	binary.BigEndian.PutUint64(lengths[8:], uint64(len(sig)))
	h.Write(lengths[:])
	h.Write(pub)
	h.Write(sig)
	h.Write(msg)
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}
