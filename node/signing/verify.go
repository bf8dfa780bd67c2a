package signing

import (
	"crypto/ed25519"
	"errors"
)

// Verdict is the outcome of checking one signature.
type Verdict int

// Verdicts. Persisted as integers: do not reorder.
const (
	// Valid: the key the kid names verifies the canonical bytes.
	Valid Verdict = iota
	// Invalid: the key the kid names does not verify the bytes (forgery or
	// tampering).
	Invalid
	// Unverifiable: nothing can be concluded (unsigned, legacy, unknown
	// algorithm or key, malformed tag, no document).
	Unverifiable
)

// String returns "valid", "invalid" or "unverifiable".
func (v Verdict) String() string {
	switch v {
	case Valid:
		return "valid"
	case Invalid:
		return "invalid"
	case Unverifiable:
		return "unverifiable"
	}
	return "unknown"
}

// Reason says why a verdict was reached. The unverifiable reasons reuse
// freeq's `verified_by` words where freeq has one.
type Reason string

// Reasons.
const (
	ReasonValid             Reason = "valid"
	ReasonSignatureMismatch Reason = "signature-mismatch"
	ReasonUnsigned          Reason = "unsigned"
	ReasonLegacyFormat      Reason = "unverifiable-legacy-format"
	ReasonUnknownAlgorithm  Reason = "unverifiable-unknown-algorithm"
	ReasonUnusableSignature Reason = "unverifiable-unusable-signature"
	ReasonUnknownKey        Reason = "unverifiable-unknown-key"
	ReasonKIDMismatch       Reason = "unverifiable-kid-mismatch"
	ReasonUnusableKey       Reason = "unverifiable-unusable-key"
	ReasonUnknownSender     Reason = "unverifiable-unknown-sender"
	ReasonNoVenue           Reason = "unverifiable-no-venue"
	ReasonNoDocument        Reason = "unverifiable-no-document"
)

// KeyLookup resolves a key id to a public key. Keys.Lookup is one.
type KeyLookup func(kid string) (ed25519.PublicKey, bool)

// Verify checks a sig tag value against canonical bytes. lookup resolves the
// tag's kid; whatever key it returns must hash to that kid.
func Verify(canonical []byte, tagValue string, lookup KeyLookup) (Verdict, Reason) {
	return verify(canonical, tagValue, lookup, Ed25519Verify)
}

// verify is Verify with the signature check passed in (VerifyCache remembers its answers).
func verify(canonical []byte, tagValue string, lookup KeyLookup, check func(ed25519.PublicKey, []byte, []byte) bool) (Verdict, Reason) {
	if tagValue == "" {
		return Unverifiable, ReasonUnsigned
	}
	tag, err := ParseSigTag(tagValue)
	switch {
	case errors.Is(err, ErrLegacyFormat):
		return Unverifiable, ReasonLegacyFormat
	case errors.Is(err, ErrUnknownAlgorithm):
		return Unverifiable, ReasonUnknownAlgorithm
	case err != nil:
		return Unverifiable, ReasonUnusableSignature
	}
	if lookup == nil {
		return Unverifiable, ReasonUnknownKey
	}
	pub, ok := lookup(tag.KID)
	if !ok {
		return Unverifiable, ReasonUnknownKey
	}
	if len(pub) != ed25519.PublicKeySize {
		return Unverifiable, ReasonUnusableKey
	}
	if KID(pub) != tag.KID {
		return Unverifiable, ReasonKIDMismatch
	}
	if !check(pub, canonical, tag.Signature) {
		return Invalid, ReasonSignatureMismatch
	}
	return Valid, ReasonValid
}

// VerifyDocument rebuilds doc's canonical form and verifies tagValue over
// it. A document that cannot be rebuilt (no sender, no venue, a missing
// mandatory field) is unverifiable: its absence says nothing about the
// signer.
func VerifyDocument(doc Document, tagValue string, lookup KeyLookup) (Verdict, Reason) {
	if tagValue == "" {
		return Unverifiable, ReasonUnsigned
	}
	canonical, err := doc.Canonical()
	if err != nil {
		return Unverifiable, documentReason(err)
	}
	return Verify(canonical, tagValue, lookup)
}

// documentReason names why a document could not be built.
func documentReason(err error) Reason {
	var missing *MissingFieldError
	switch {
	case errors.As(err, &missing) && missing.Field == "from":
		return ReasonUnknownSender
	case errors.Is(err, ErrNoVenue):
		return ReasonNoVenue
	}
	return ReasonNoDocument
}
