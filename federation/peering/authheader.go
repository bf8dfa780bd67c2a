package peering

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/palaver-chat/palaver/node/signing"
)

// EnvelopeHeader authenticates a POST /federation/v1/events before its body is read:
//
//	Palaver-Envelope: signer=<server DID>, digest=sha-256:<base64url of the body's SHA-256>, sig=ed25519:<kid>:<sig>
//
// sig is the sending node's server-key signature over envelopeHeaderDomain, the signer, a line
// feed and the digest value. The receiver checks that the signer is a configured peer, that the
// kid is in its did:web document and that the signature verifies, all before it reads the body;
// then it reads at most MaxEnvelopeBytes and checks them against the digest. So only a peer's
// server key can make a node read a body, and a header copied from another request buys nothing
// but a digest mismatch. The envelope inside is verified as before.
const EnvelopeHeader = "Palaver-Envelope"

// envelopeHeaderDomain separates these signatures from every other use of a server key.
const envelopeHeaderDomain = "palaver federation envelope v1\n"

// maxEnvelopeHeader bounds the header value: a DID, a digest and a signature tag.
const maxEnvelopeHeader = 1024

// envelopeAuth is a parsed EnvelopeHeader.
type envelopeAuth struct {
	signer string
	digest [sha256.Size]byte
	tag    signing.SigTag
}

// errBadEnvelopeHeader is a missing or malformed EnvelopeHeader.
var errBadEnvelopeHeader = errors.New("bad " + EnvelopeHeader + " header")

// SignEnvelopeHeader returns the EnvelopeHeader value for body, sent by signer with priv.
func SignEnvelopeHeader(priv ed25519.PrivateKey, signer string, body []byte) string {
	digest := sha256.Sum256(body)
	d := "sha-256:" + base64.RawURLEncoding.EncodeToString(digest[:])
	return "signer=" + signer + ", digest=" + d + ", sig=" + signing.Sign(priv, envelopeHeaderSigned(signer, d))
}

func envelopeHeaderSigned(signer, digest string) []byte {
	return []byte(envelopeHeaderDomain + signer + "\n" + digest)
}

// parseEnvelopeHeader reads an EnvelopeHeader value. Nothing is verified yet.
func parseEnvelopeHeader(v string) (envelopeAuth, error) {
	var a envelopeAuth
	if v == "" {
		return a, fmt.Errorf("%w: the header is required", errBadEnvelopeHeader)
	}
	if len(v) > maxEnvelopeHeader {
		return a, fmt.Errorf("%w: longer than %d bytes", errBadEnvelopeHeader, maxEnvelopeHeader)
	}
	fields := map[string]string{}
	for part := range strings.SplitSeq(v, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || value == "" {
			return a, fmt.Errorf("%w: %q is not name=value", errBadEnvelopeHeader, truncate(part, 40))
		}
		if _, dup := fields[name]; dup {
			return a, fmt.Errorf("%w: %s given twice", errBadEnvelopeHeader, truncate(name, 20))
		}
		fields[name] = value
	}
	if len(fields) != 3 || fields["signer"] == "" || fields["digest"] == "" || fields["sig"] == "" {
		return a, fmt.Errorf("%w: want exactly signer, digest and sig", errBadEnvelopeHeader)
	}
	a.signer = fields["signer"]
	encoded, ok := strings.CutPrefix(fields["digest"], "sha-256:")
	if !ok {
		return a, fmt.Errorf("%w: the digest must be sha-256", errBadEnvelopeHeader)
	}
	digest, err := base64.RawURLEncoding.DecodeString(encoded)
	if err != nil || len(digest) != sha256.Size {
		return a, fmt.Errorf("%w: the digest is not 32 bytes of base64url", errBadEnvelopeHeader)
	}
	copy(a.digest[:], digest)
	if a.tag, err = signing.ParseSigTag(fields["sig"]); err != nil {
		return a, fmt.Errorf("%w: sig: %v", errBadEnvelopeHeader, err)
	}
	return a, nil
}

// verify checks the header's signature with the signer's key pub.
func (a envelopeAuth) verify(pub ed25519.PublicKey) bool {
	d := "sha-256:" + base64.RawURLEncoding.EncodeToString(a.digest[:])
	return ed25519.Verify(pub, envelopeHeaderSigned(a.signer, d), a.tag.Signature)
}

// matches reports whether body is the one the header signed.
func (a envelopeAuth) matches(body []byte) bool {
	sum := sha256.Sum256(body)
	return bytes.Equal(sum[:], a.digest[:])
}
