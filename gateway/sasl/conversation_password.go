package sasl

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
)

// completePlain checks a whole PLAIN response (base64 of [authzid] NUL authcid NUL passwd).
func (c *Conversation) completePlain(payload string) Result {
	msg, err := decodePayload(payload)
	if err != nil {
		return Result{Outcome: OutcomeFailure, Text: TextBadResponse, Err: err}
	}
	p, err := ParsePlain(msg)
	clear(msg)
	if err != nil {
		return Result{Outcome: OutcomeFailure, Text: TextBadResponse, Err: err}
	}
	did, _, err := c.verifier.checkPassword(p.AuthcID, p.Password)
	if err == nil {
		err = c.verifier.authorize(p.AuthzID, p.AuthcID, did)
	}
	return c.passwordVerdict(did, "plain", err)
}

// stepSCRAM handles one whole SCRAM-SHA-256 client message.
func (c *Conversation) stepSCRAM(payload string) Result {
	msg, err := decodePayload(payload)
	if err != nil {
		c.reset()
		return Result{Outcome: OutcomeFailure, Text: TextBadResponse, Err: err}
	}
	st := c.scram
	reply, done, err := c.verifier.scramStep(st, msg, func(b []byte) error {
		_, err := io.ReadFull(c.random, b)
		return err
	})
	clear(msg)
	switch {
	case err != nil:
		c.reset()
		return c.passwordVerdict("", "", err)
	case done:
		c.reset()
		return c.passwordVerdict(st.did, "scram-sha-256", nil)
	}
	return Result{Outcome: OutcomeChallenge, Payload: base64.StdEncoding.EncodeToString([]byte(reply))}
}

// passwordVerdict maps the outcome of a password check to a Result: a wrong password counts
// towards MaxFailures, a malformed message does not.
func (c *Conversation) passwordVerdict(did, method string, err error) Result {
	switch {
	case err == nil:
		if c.verifier.Allow != nil && !c.verifier.Allow(did) {
			return c.counted(TextNotAuthorized, fmt.Errorf("%w: %s", ErrNotAllowed, did))
		}
		return Result{Outcome: OutcomeSuccess, DID: did, Method: method}
	case errors.Is(err, ErrRejected):
		return c.counted(TextFailed, err)
	default:
		return Result{Outcome: OutcomeFailure, Text: TextBadResponse, Err: err}
	}
}

// decodePayload decodes a password mechanism's response: standard base64 with padding; "+"
// (assembled as "") is the empty response.
func decodePayload(payload string) ([]byte, error) {
	msg, err := base64.StdEncoding.Strict().DecodeString(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: response is not base64: %v", ErrBadResponse, err)
	}
	return msg, nil
}
