package sasl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrBadResponse: the AUTHENTICATE payload is not base64url (no padding) of a
// JSON object with a "did:" DID and a signature.
var ErrBadResponse = errors.New("sasl: malformed response")

// Response is the client's answer to a challenge.
type Response struct {
	DID            string // "did"
	Signature      string // "signature": base64url signature (crypto) or PDS access token (atproto)
	Method         string // "method": "", "crypto", "atproto" or "pds-session"
	PDSURL         string // "pds_url"
	ChallengeNonce string // "challenge_nonce": must echo the challenge nonce for the PDS methods
}

// DecodeResponse decodes a complete AUTHENTICATE payload. Decoding is strict:
// base64url without padding (and without line breaks), then a JSON object
// whose "did" starts with "did:" and whose "signature" is non-empty. Member
// names match exactly; unknown members are ignored; known members must be
// strings.
func DecodeResponse(payload string) (Response, error) {
	if strings.ContainsAny(payload, "\r\n") {
		return Response{}, fmt.Errorf("%w: line break in payload", ErrBadResponse)
	}
	data, err := base64.RawURLEncoding.Strict().DecodeString(payload)
	if err != nil {
		return Response{}, fmt.Errorf("%w: base64url: %v", ErrBadResponse, err)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Response{}, fmt.Errorf("%w: not a JSON object", ErrBadResponse)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return Response{}, fmt.Errorf("%w: JSON: %v", ErrBadResponse, err)
	}
	var r Response
	for name, dst := range map[string]*string{
		"did": &r.DID, "signature": &r.Signature, "method": &r.Method,
		"pds_url": &r.PDSURL, "challenge_nonce": &r.ChallengeNonce,
	} {
		raw, ok := members[name]
		if !ok || string(raw) == "null" {
			continue
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return Response{}, fmt.Errorf("%w: member %q is not a string", ErrBadResponse, name)
		}
	}
	if !strings.HasPrefix(r.DID, "did:") {
		return Response{}, fmt.Errorf("%w: did must start with \"did:\"", ErrBadResponse)
	}
	if r.Signature == "" {
		return Response{}, fmt.Errorf("%w: signature missing", ErrBadResponse)
	}
	return r, nil
}
