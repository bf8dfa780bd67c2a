package sasl

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Mechanism is the SASL mechanism name (matched case-insensitively).
const Mechanism = "ATPROTO-CHALLENGE"

// DefaultChallengeTTL is how far a challenge's timestamp may be from the
// verification time, in either direction.
const DefaultChallengeTTL = 60 * time.Second

// nonceBytes is the number of random bytes in a challenge nonce.
const nonceBytes = 32

// ChunkSize is the IRCv3 AUTHENTICATE chunk length: a chunk of exactly this
// many bytes means more follows.
const ChunkSize = 400

// Challenge is one issued challenge. JSON holds the exact bytes the client
// must sign; the other fields are what they contain.
type Challenge struct {
	JSON      []byte
	SessionID string
	Nonce     string
	Timestamp int64
}

// challengeJSON fixes the member order and names of the challenge document.
type challengeJSON struct {
	SessionID string `json:"session_id"`
	Nonce     string `json:"nonce"`
	Timestamp int64  `json:"timestamp"`
}

// NewChallenge builds {"session_id":…,"nonce":…,"timestamp":…} (compact, in
// this order) with a nonce of 32 bytes read from random, base64url without
// padding. The encoded challenge must fit one AUTHENTICATE line (ChunkSize
// bytes), which bounds the session id to a little over 200 plain characters.
func NewChallenge(sessionID string, now time.Time, random io.Reader) (Challenge, error) {
	var nonce [nonceBytes]byte
	if _, err := io.ReadFull(random, nonce[:]); err != nil {
		return Challenge{}, fmt.Errorf("sasl: reading challenge nonce: %w", err)
	}
	c := Challenge{
		SessionID: sessionID,
		Nonce:     base64.RawURLEncoding.EncodeToString(nonce[:]),
		Timestamp: now.Unix(),
	}
	data, err := json.Marshal(challengeJSON{SessionID: c.SessionID, Nonce: c.Nonce, Timestamp: c.Timestamp})
	if err != nil {
		return Challenge{}, fmt.Errorf("sasl: encoding challenge: %w", err)
	}
	c.JSON = data
	if n := base64.RawURLEncoding.EncodedLen(len(data)); n >= ChunkSize {
		return Challenge{}, fmt.Errorf("sasl: challenge for session id of %d bytes encodes to %d bytes, over one AUTHENTICATE line", len(sessionID), n)
	}
	return c, nil
}

// Encoded returns the challenge as sent: base64url of JSON, without padding.
func (c Challenge) Encoded() string { return base64.RawURLEncoding.EncodeToString(c.JSON) }

// fresh reports whether the challenge's timestamp is within ttl of now.
func (c Challenge) fresh(now time.Time, ttl time.Duration) bool {
	age := now.Sub(time.Unix(c.Timestamp, 0))
	if age < 0 {
		age = -age
	}
	return age <= ttl
}
