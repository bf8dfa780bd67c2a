package sasl

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/node/signing"
)

// Verification errors. Verify wraps them; test with errors.Is.
var (
	// ErrChallengeExpired: the challenge timestamp is more than the TTL away from now.
	ErrChallengeExpired = errors.New("sasl: challenge expired")
	// ErrUnsupportedMethod: the response names a method this server does not implement.
	ErrUnsupportedMethod = errors.New("sasl: unsupported response method")
	// ErrRejected: the response does not prove control of the DID (bad
	// signature, unresolvable DID, no usable keys, PDS refusal, wrong nonce).
	ErrRejected = errors.New("sasl: verification failed")
	// ErrNotAllowed: the DID proved itself but the connect allow-list refuses it.
	ErrNotAllowed = errors.New("sasl: DID not allowed to connect")
)

// Verifier checks responses against the challenges they answer.
type Verifier struct {
	Resolver     *keyresolver.Resolver
	ChallengeTTL time.Duration         // default DefaultChallengeTTL; expiry is |now − timestamp| > TTL
	Allow        func(did string) bool // optional connect allow-list; nil lets every DID in
	// Passwords looks up client passwords for PLAIN and SCRAM-SHA-256; nil offers neither.
	Passwords Passwords

	decoyOnce sync.Once // draws decoyKey, which salts the stand-in credential of unknown logins
	decoyKey  []byte
}

// Verify checks that r answers ch at time now:
//
//   - method "" or "crypto": Signature is base64url (no padding) of a
//     signature over the exact challenge JSON bytes by one of the candidate
//     keys of the DID document (each key only under its own algorithm);
//   - method "atproto" or "pds-session": Signature is the user's PDS access
//     token, ChallengeNonce must equal the challenge nonce, and the PDS named
//     by the DID document (which PDSURL, if given, must match) must accept the
//     token for this DID at com.atproto.server.getSession.
//
// After a successful proof, Allow (if set) must accept the DID. Errors wrap
// ErrChallengeExpired, ErrUnsupportedMethod, ErrRejected or ErrNotAllowed.
func (v *Verifier) Verify(ctx context.Context, ch Challenge, r Response, now time.Time) error {
	if !ch.fresh(now, v.ttl()) {
		return fmt.Errorf("%w: issued at %d, now %d", ErrChallengeExpired, ch.Timestamp, now.Unix())
	}
	var err error
	switch r.Method {
	case "", "crypto":
		err = v.verifySignature(ctx, ch, r)
	case "atproto", "pds-session":
		err = v.verifyPDSSession(ctx, ch, r)
	default:
		return fmt.Errorf("%w: %q", ErrUnsupportedMethod, r.Method)
	}
	if err != nil {
		return err
	}
	if v.Allow != nil && !v.Allow(r.DID) {
		return fmt.Errorf("%w: %s", ErrNotAllowed, keyresolver.ShortDID(r.DID))
	}
	return nil
}

func (v *Verifier) ttl() time.Duration {
	if v.ChallengeTTL > 0 {
		return v.ChallengeTTL
	}
	return DefaultChallengeTTL
}

func (v *Verifier) resolve(ctx context.Context, did string) (*keyresolver.Document, error) {
	if v.Resolver == nil {
		return nil, fmt.Errorf("%w: no DID resolver configured", ErrRejected)
	}
	doc, err := v.Resolver.Resolve(ctx, did)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRejected, err) // err names the DID
	}
	if doc.ID != did {
		return nil, fmt.Errorf("%w: document id %q is not %q", ErrRejected, keyresolver.ShortDID(doc.ID), keyresolver.ShortDID(did))
	}
	return doc, nil
}

func (v *Verifier) verifySignature(ctx context.Context, ch Challenge, r Response) error {
	sig, err := base64.RawURLEncoding.Strict().DecodeString(r.Signature)
	if err != nil {
		return fmt.Errorf("%w: signature is not base64url without padding: %v", ErrRejected, err)
	}
	doc, err := v.resolve(ctx, r.DID)
	if err != nil {
		return err
	}
	keys := doc.CandidateKeys()
	if len(keys) == 0 {
		return fmt.Errorf("%w: %s has no usable authentication or assertion keys", ErrRejected, keyresolver.ShortDID(r.DID))
	}
	for _, key := range keys {
		if verifyKey(key, ch.JSON, sig) {
			return nil
		}
	}
	return fmt.Errorf("%w: signature matches none of the %d keys of %s", ErrRejected, len(keys), keyresolver.ShortDID(r.DID))
}

// verifyKey is key.Verify, with an ed25519 key checked by signing.Ed25519VerifyOnce: the same
// verdicts at about half the cost of crypto/ed25519, which a login storm spends most of its
// verification time in (B2).
func verifyKey(key keyresolver.PublicKey, msg, sig []byte) bool {
	if key.Type == keyresolver.Ed25519 {
		return signing.Ed25519VerifyOnce(key.Raw, msg, sig)
	}
	return key.Verify(msg, sig)
}
