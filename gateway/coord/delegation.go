package coord

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/node/canonical"
)

// DelegationType is the type of the delegation certificates this server verifies.
const DelegationType = "FreeqBotDelegation/v1"

// MaxProvenanceBytes bounds a decoded PROVENANCE declaration.
const MaxProvenanceBytes = 4096

// Errors of a provenance declaration that refuse it outright (nothing is stored).
var (
	// ErrProvenanceMalformed: not base64url of a JSON object, or too large.
	ErrProvenanceMalformed = errors.New("provenance is not base64url-encoded JSON of at most 4096 bytes")
	// ErrDelegationMismatch: the certificate names another bot than the session's DID.
	ErrDelegationMismatch = errors.New("the certificate's bot_did is not the authenticated DID")
)

// Delegation is the outcome of checking a provenance declaration.
type Delegation struct {
	// Verified is true only when a FreeqBotDelegation/v1 certificate's signature checked against
	// a key of its creator that was live when the certificate was made.
	Verified bool
	// Principal is the creator (the person) a verified certificate names.
	Principal string
	// Reason says why, in one line.
	Reason string
	// Document is the declaration as JSON.
	Document json.RawMessage
	// Expires is the certificate's expires_at (unix s), 0 when it names none.
	Expires int64
}

// CreatorKey is a key a creator DID registered, with the times it stopped counting (unix s; 0 =
// never).
type CreatorKey struct {
	PublicKey ed25519.PublicKey
	RemovedAt int64
	ExpiresAt int64
}

// DecodeProvenance reads the parameter of PROVENANCE: base64url (padding tolerated) of a JSON
// object.
func DecodeProvenance(param string) (map[string]any, []byte, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(param, "="))
	if err != nil || len(raw) == 0 || len(raw) > MaxProvenanceBytes {
		return nil, nil, ErrProvenanceMalformed
	}
	var doc map[string]any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil || doc == nil || dec.More() {
		return nil, nil, ErrProvenanceMalformed
	}
	return doc, raw, nil
}

// VerifyDelegation checks a provenance declaration presented by submitter. A declaration that
// is not a FreeqBotDelegation/v1 certificate is kept unverified; a certificate for another bot is
// an error. The certificate's signature (base64url ed25519 over the JCS of the certificate
// without its signature field) must check against one of the creator's keys that was neither
// retired nor expired when the certificate was made (created_at, RFC 3339): the keys the creator
// registered here, and a did:key creator's own key.
func VerifyDelegation(doc map[string]any, raw []byte, submitter string, keysOf func(did string) []CreatorKey) (Delegation, error) {
	d := Delegation{Document: json.RawMessage(raw)}
	str := func(name string) string { s, _ := doc[name].(string); return s }
	if str("type") != DelegationType {
		d.Reason = "not a " + DelegationType + " certificate; stored unverified"
		return d, nil
	}
	bot := str("bot_did")
	if bot == "" {
		d.Reason = "the certificate names no bot_did"
		return d, nil
	}
	if bot != submitter {
		return d, fmt.Errorf("%w: %s", ErrDelegationMismatch, keyresolver.ShortDID(bot))
	}
	creator := str("creator_did")
	if _, err := keyresolver.ValidateDID(creator); err != nil {
		d.Reason = "the certificate's creator_did is not a DID"
		return d, nil
	}
	sigText := str("signature")
	if sigText == "" {
		d.Reason = "the certificate is unsigned"
		return d, nil
	}
	created, err := time.Parse(time.RFC3339, str("created_at"))
	if err != nil {
		d.Reason = "the certificate's created_at is not RFC 3339"
		return d, nil
	}
	if exp := str("expires_at"); exp != "" {
		t, err := time.Parse(time.RFC3339, exp)
		if err != nil {
			d.Reason = "the certificate's expires_at is not RFC 3339"
			return d, nil
		}
		d.Expires = t.Unix()
	}
	sig, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(sigText, "="))
	if err != nil || len(sig) != ed25519.SignatureSize {
		d.Reason = "the certificate's signature is not 64 bytes of base64url"
		return d, nil
	}
	body := make(map[string]any, len(doc))
	for k, v := range doc {
		if k != "signature" {
			body[k] = v
		}
	}
	msg, err := canonical.Marshal(body)
	if err != nil {
		d.Reason = "the certificate cannot be put in canonical form: " + err.Error()
		return d, nil
	}
	var keys []CreatorKey
	if k, err := keyresolver.ParseDIDKey(creator); err == nil && len(k.Raw) == ed25519.PublicKeySize && k.Type.String() == "ed25519" {
		keys = append(keys, CreatorKey{PublicKey: ed25519.PublicKey(k.Raw)})
	}
	if keysOf != nil {
		keys = append(keys, keysOf(creator)...)
	}
	at := created.Unix()
	candidates := 0
	for _, k := range keys {
		if (k.RemovedAt != 0 && k.RemovedAt <= at) || (k.ExpiresAt != 0 && k.ExpiresAt <= at) || len(k.PublicKey) != ed25519.PublicKeySize {
			continue
		}
		candidates++
		if ed25519.Verify(k.PublicKey, msg, sig) {
			d.Verified, d.Principal = true, creator
			d.Reason = "verified against a key of " + creator
			return d, nil
		}
	}
	if candidates == 0 {
		d.Reason = "no key of " + creator + " that was live when the certificate was made"
		return d, nil
	}
	d.Reason = fmt.Sprintf("the signature does not verify against any of the %d keys of %s", candidates, creator)
	return d, nil
}
