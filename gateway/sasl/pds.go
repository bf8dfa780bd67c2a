package sasl

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxSessionBytes bounds the getSession answer read from a PDS.
const maxSessionBytes = 64 << 10

// getSessionPath is the XRPC endpoint that tells who an access token belongs to.
const getSessionPath = "/xrpc/com.atproto.server.getSession"

// verifyPDSSession proves control of r.DID by the DID's own PDS accepting
// r.Signature as an access token for that DID.
//
// What this method can and cannot prove: the client hands this server its
// PDS access token, which the server could replay to the PDS for as long as
// the token lives. The token itself cannot be bound to this challenge: an
// atproto access token carries no claim the client chooses, and getSession
// takes no nonce. The nonce echo binds only the response (a response made
// for another challenge is refused). So the token is never logged, never put
// in an error, and never kept: it lives in the response being checked and in
// the one getSession request (the SASL buffer that held it is wiped). Where
// the token is a JWT, as PDS access tokens are, its claims are checked
// before it is sent anywhere: its subject must be the DID, it must not have
// expired, and it must not be a refresh token (which lives for months), so
// that a stale or misdirected token is not forwarded to the PDS at all.
// The crypto method, which signs the challenge itself, has none of these
// limits and is what clients should prefer.
func (v *Verifier) verifyPDSSession(ctx context.Context, ch Challenge, r Response) error {
	if r.ChallengeNonce == "" || r.ChallengeNonce != ch.Nonce {
		return fmt.Errorf("%w: challenge_nonce does not match the challenge", ErrRejected)
	}
	if !isTokenText(r.Signature) {
		return fmt.Errorf("%w: access token has characters not allowed in a bearer token", ErrRejected)
	}
	if problem := tokenClaimsProblem(r.Signature, r.DID, time.Unix(ch.Timestamp, 0)); problem != "" {
		return fmt.Errorf("%w: access token %s", ErrRejected, problem)
	}
	doc, err := v.resolve(ctx, r.DID)
	if err != nil {
		return err
	}
	endpoint, ok := doc.PDSEndpoint()
	if !ok {
		return fmt.Errorf("%w: %s names no #atproto_pds service", ErrRejected, r.DID)
	}
	pds, err := parsePDSURL(endpoint)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrRejected, r.DID, err)
	}
	if r.PDSURL != "" {
		claimed, err := parsePDSURL(r.PDSURL)
		if err != nil || claimed != pds {
			return fmt.Errorf("%w: pds_url %q is not the document's PDS %q", ErrRejected, r.PDSURL, endpoint)
		}
	}
	sessionDID, err := v.getSession(ctx, pds, r.Signature)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRejected, err)
	}
	if sessionDID != r.DID {
		return fmt.Errorf("%w: PDS session belongs to %q, not %q", ErrRejected, sessionDID, r.DID)
	}
	return nil
}

// parsePDSURL accepts an absolute https URL with no user info, query or
// fragment and returns it normalized (lowercase scheme and host, no trailing
// slash), ready for an XRPC path to be appended.
func parsePDSURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("PDS endpoint %q: %w", raw, err)
	}
	if !strings.EqualFold(u.Scheme, "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("PDS endpoint %q is not a plain https URL", raw)
	}
	return "https://" + strings.ToLower(u.Host) + strings.TrimRight(u.EscapedPath(), "/"), nil
}

// refreshScope is the scope of an atproto refresh token.
const refreshScope = "com.atproto.refresh"

// tokenClaimsProblem reads the claims of a JWT-shaped token without
// verifying its signature (the PDS does that) and says what makes it unfit
// to be sent to the PDS for did at now, or "" when nothing does. A token
// that is not a JWT is left to the PDS. The answer never quotes the token.
func tokenClaimsProblem(token, did string, now time.Time) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "is not a well-formed JWT"
	}
	var claims struct {
		Sub   *string      `json:"sub"`
		Exp   *json.Number `json:"exp"`
		Scope string       `json:"scope"`
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&claims); err != nil {
		return "has claims that are not a JSON object"
	}
	if claims.Sub != nil && *claims.Sub != did {
		return "belongs to another DID"
	}
	if claims.Exp != nil {
		exp, err := claims.Exp.Float64()
		if err != nil || float64(now.Unix()) >= exp {
			return "has expired"
		}
	}
	if claims.Scope == refreshScope {
		return "is a refresh token; send an access token"
	}
	return ""
}

// isTokenText reports whether s is visible ASCII, as a bearer token must be.
func isTokenText(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return s != ""
}

// getSession asks the PDS whose session the access token is and returns its DID.
func (v *Verifier) getSession(ctx context.Context, pds, token string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pds+getSessionPath, nil)
	if err != nil {
		return "", fmt.Errorf("building getSession request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	resp, err := v.Resolver.HTTPClient().Do(req)
	if err != nil {
		return "", fmt.Errorf("getSession at %s: %w", pds, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("getSession at %s: status %s", pds, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSessionBytes+1))
	if err != nil {
		return "", fmt.Errorf("reading getSession from %s: %w", pds, err)
	}
	if len(body) > maxSessionBytes {
		return "", fmt.Errorf("getSession from %s: answer over %d bytes", pds, maxSessionBytes)
	}
	var session struct {
		DID string `json:"did"`
	}
	if err := json.Unmarshal(body, &session); err != nil {
		return "", fmt.Errorf("getSession from %s: %w", pds, err)
	}
	return session.DID, nil
}
