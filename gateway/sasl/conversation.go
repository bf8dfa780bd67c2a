package sasl

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// MaxFailures is the number of counted failures after which the connection
// is told "Too many SASL failures" and closed.
const MaxFailures = 3

// MaxPayloadBytes caps an assembled (base64) response payload.
const MaxPayloadBytes = 16 << 10

// The 904 texts, as freeq sends them.
const (
	TextFailed        = "SASL authentication failed"
	TextNoChallenge   = "SASL authentication failed (no challenge)"
	TextBadResponse   = "SASL authentication failed (bad response)"
	TextUnsupported   = "Unsupported SASL mechanism"
	TextAborted       = "SASL authentication aborted"
	TextNotAuthorized = "Not authorized to connect to this server"
	TextTooLong       = "SASL message too long"
)

// Outcome tells the gateway what to send for one AUTHENTICATE line.
type Outcome int

// Outcomes. Do not reorder.
const (
	OutcomeChallenge        Outcome = iota // send "AUTHENTICATE <Result.Payload>" (no server prefix)
	OutcomeContinue                        // chunk buffered; send nothing
	OutcomeSuccess                         // Result.DID, Result.Method set
	OutcomeFailure                         // send 904 with Result.Text; Result.Counted says if it counted towards MaxFailures
	OutcomeAborted                         // client sent "*": send 906 and/or 904 Result.Text
	OutcomeUnknownMechanism                // send 908 <Result.Payload = mechanism list> then 904 Result.Text
	OutcomeTooManyFailures                 // the MaxFailures-th counted failure: send 904 Result.Text, then ERROR :Too many SASL failures, and close
	OutcomeIgnored                         // the connection already hit MaxFailures: send nothing
	OutcomeTooLong                         // a password mechanism's chunk was over ChunkSize bytes: send 905 Result.Text
)

// Result is the answer to one AUTHENTICATE line.
type Result struct {
	Outcome Outcome
	Payload string // OutcomeChallenge: the encoded challenge; OutcomeUnknownMechanism: the mechanism list for 908
	DID     string // OutcomeSuccess: the authenticated DID
	Method  string // OutcomeSuccess: "crypto", "atproto", "pds-session", "plain" or "scram-sha-256"
	Text    string // 904/906 text for failures, aborts and unknown mechanisms
	Counted bool   // the failure counted towards MaxFailures
	Err     error  // the underlying cause of a failure, for logs only: never send it to the client
}

// Conversation is the SASL state of one connection. It is not safe for
// concurrent use: the connection's reader goroutine owns it.
type Conversation struct {
	verifier  *Verifier
	sessionID string
	random    io.Reader

	mech      string      // the mechanism in progress, "" for none
	challenge *Challenge  // ATPROTO-CHALLENGE: the outstanding challenge; taken when an answer completes
	scram     *scramState // SCRAM-SHA-256: the exchange in progress
	buf       bytes.Buffer
	failures  int
}

// NewConversation starts the SASL state of a connection. sessionID goes into
// every challenge (keep it under ~200 plain characters); random supplies the
// nonces (nil means crypto/rand).
func NewConversation(v *Verifier, sessionID string, random io.Reader) *Conversation {
	if random == nil {
		random = rand.Reader
	}
	return &Conversation{verifier: v, sessionID: sessionID, random: random}
}

// Failures returns the number of counted failures so far.
func (c *Conversation) Failures() int { return c.failures }

// Handle processes the single argument of one AUTHENTICATE line received at now.
//
// A mechanism name (any case) starts that mechanism, replacing any exchange in progress:
// ATPROTO-CHALLENGE issues a challenge, PLAIN and SCRAM-SHA-256 (when the Verifier has
// Passwords) answer "+". "*" aborts. While a mechanism is in progress, other arguments are
// response chunks: a 400-byte chunk means more follows, a shorter one ends the response, and "+"
// ends a response whose length is a multiple of 400 (or is empty). ATPROTO-CHALLENGE also takes
// a single longer line as a whole response; the password mechanisms answer one with 905. A
// complete ATPROTO-CHALLENGE response takes the challenge, so each challenge is answered at
// most once; the conversation can then start again.
func (c *Conversation) Handle(ctx context.Context, param string, now time.Time) Result {
	if c.failures >= MaxFailures {
		return Result{Outcome: OutcomeIgnored}
	}
	switch {
	case param == "*":
		c.reset()
		return Result{Outcome: OutcomeAborted, Text: TextAborted}
	case strings.EqualFold(param, Mechanism):
		return c.issue(now)
	case c.verifier.PasswordMechanisms() && (strings.EqualFold(param, MechPlain) || strings.EqualFold(param, MechSCRAM)):
		c.reset()
		c.mech = strings.ToUpper(param)
		if c.mech == MechSCRAM {
			c.scram = &scramState{}
		}
		return Result{Outcome: OutcomeChallenge, Payload: "+"}
	case c.mech == "":
		return Result{Outcome: OutcomeUnknownMechanism, Payload: c.verifier.Mechanisms(), Text: TextUnsupported}
	}

	if param != "+" {
		if c.mech != Mechanism && len(param) > ChunkSize {
			c.reset()
			return Result{Outcome: OutcomeTooLong, Text: TextTooLong}
		}
		if c.buf.Len()+len(param) > MaxPayloadBytes {
			c.reset()
			return Result{Outcome: OutcomeFailure, Text: TextBadResponse,
				Err: fmt.Errorf("%w: payload over %d bytes", ErrBadResponse, MaxPayloadBytes)}
		}
		c.buf.WriteString(param)
		if len(param) == ChunkSize {
			return Result{Outcome: OutcomeContinue}
		}
	}
	payload := c.buf.String()
	switch c.mech {
	case MechPlain:
		c.reset()
		return c.completePlain(payload)
	case MechSCRAM:
		c.wipe()
		return c.stepSCRAM(payload)
	}
	// Taking the challenge here makes it single-use, whatever the verdict.
	ch := *c.challenge
	c.reset()
	return c.complete(ctx, payload, ch, now)
}

// issue mints a challenge and makes it the only one this connection may answer.
func (c *Conversation) issue(now time.Time) Result {
	c.reset()
	ch, err := NewChallenge(c.sessionID, now, c.random)
	if err != nil {
		return Result{Outcome: OutcomeFailure, Text: TextFailed, Err: err}
	}
	c.mech, c.challenge = Mechanism, &ch
	return Result{Outcome: OutcomeChallenge, Payload: ch.Encoded()}
}

// reset forgets the mechanism in progress, its challenge or exchange and any buffered
// chunks, wiping them: a response may carry a PDS access token or a password, never kept.
func (c *Conversation) reset() {
	c.mech, c.challenge, c.scram = "", nil, nil
	c.wipe()
}

// wipe clears the buffered chunks.
func (c *Conversation) wipe() {
	b := c.buf.Bytes()
	clear(b[:cap(b)])
	c.buf.Reset()
}

// complete decodes and verifies a whole response against the (already
// taken) challenge and maps the verdict to a Result.
func (c *Conversation) complete(ctx context.Context, payload string, ch Challenge, now time.Time) Result {
	resp, err := DecodeResponse(payload)
	if err != nil {
		return Result{Outcome: OutcomeFailure, Text: TextBadResponse, Err: err}
	}
	err = c.verifier.Verify(ctx, ch, resp, now)
	switch {
	case err == nil:
		method := resp.Method
		if method == "" {
			method = "crypto"
		}
		return Result{Outcome: OutcomeSuccess, DID: resp.DID, Method: method}
	case errors.Is(err, ErrChallengeExpired):
		return Result{Outcome: OutcomeFailure, Text: TextNoChallenge, Err: err}
	case errors.Is(err, ErrUnsupportedMethod):
		return Result{Outcome: OutcomeFailure, Text: TextFailed, Err: err}
	case errors.Is(err, ErrNotAllowed):
		return c.counted(TextNotAuthorized, err)
	default:
		return c.counted(TextFailed, err)
	}
}

// counted records a verification failure.
func (c *Conversation) counted(text string, err error) Result {
	c.failures++
	outcome := OutcomeFailure
	if c.failures >= MaxFailures {
		outcome = OutcomeTooManyFailures
	}
	return Result{Outcome: outcome, Text: text, Counted: true, Err: err}
}
