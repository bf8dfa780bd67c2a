package ircclient

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// saslChunkSize is the IRCv3 AUTHENTICATE payload chunk length.
const saslChunkSize = 400

// bearerPrefix starts the NOTICE text that carries the REST bearer token.
const bearerPrefix = "API-BEARER "

// ErrSASLFailed reports a refused SASL exchange (904 and friends); the
// error text carries the server's reason.
var ErrSASLFailed = errors.New("ircclient: SASL authentication failed")

// SASLResult is the outcome of a successful ATPROTO-CHALLENGE login.
type SASLResult struct {
	DID   string           // the DID the server logged the session in as
	Token string           // the REST bearer token from "NOTICE * :API-BEARER <token>"
	Lines []ircmsg.Message // every line read during the exchange, in order
}

// saslResponse is the JSON answer to a challenge (method "crypto").
type saslResponse struct {
	DID       string `json:"did"`
	Signature string `json:"signature"`
	Method    string `json:"method"`
}

// AuthenticateSASL runs the ATPROTO-CHALLENGE exchange on a connection that
// is negotiating capabilities or already registered: it asks for a
// challenge, signs the decoded challenge bytes exactly as received, sends
// {"did","signature","method":"crypto"} base64url (unpadded) in 400-byte
// AUTHENTICATE chunks (ending with "AUTHENTICATE +" when the payload is a
// whole number of chunks), then waits for 903 and the API-BEARER NOTICE.
// Failures (904, 902, 905, 906, 907, 908, ERROR) wrap ErrSASLFailed.
func (c *Client) AuthenticateSASL(ctx context.Context, s Signer) (SASLResult, error) {
	var res SASLResult
	if err := c.Send("AUTHENTICATE ATPROTO-CHALLENGE"); err != nil {
		return res, err
	}
	challenge, err := c.readChallenge(ctx, &res.Lines)
	if err != nil {
		return res, err
	}
	sig, err := s.Sign(challenge)
	if err != nil {
		return res, fmt.Errorf("ircclient: signing the SASL challenge: %w", err)
	}
	body, err := json.Marshal(saslResponse{
		DID:       s.DID(),
		Signature: base64.RawURLEncoding.EncodeToString(sig),
		Method:    "crypto",
	})
	if err != nil {
		return res, fmt.Errorf("ircclient: encoding the SASL response: %w", err)
	}
	for _, chunk := range saslChunks(base64.RawURLEncoding.EncodeToString(body)) {
		if err := c.Send("AUTHENTICATE " + chunk); err != nil {
			return res, err
		}
	}
	res.DID = s.DID()
	if err := c.awaitSASLSuccess(ctx, &res); err != nil {
		return res, err
	}
	return res, nil
}

// readChallenge reads the server's AUTHENTICATE challenge, reassembling
// 400-byte chunks, and decodes it.
func (c *Client) readChallenge(ctx context.Context, lines *[]ircmsg.Message) ([]byte, error) {
	var encoded strings.Builder
	for {
		msg, err := c.readSASLReply(ctx, lines)
		if err != nil {
			return nil, fmt.Errorf("ircclient: waiting for the SASL challenge: %w", err)
		}
		if msg.Command != "AUTHENTICATE" {
			continue
		}
		chunk := msg.Param(0)
		if chunk != "+" {
			encoded.WriteString(chunk)
		}
		if len(chunk) < saslChunkSize {
			break
		}
	}
	challenge, err := decodeBase64URL(encoded.String())
	if err != nil {
		return nil, fmt.Errorf("ircclient: decoding the SASL challenge %q: %w", encoded.String(), err)
	}
	return challenge, nil
}

// awaitSASLSuccess waits for both 903 and the API-BEARER NOTICE, checking
// that a 900 (if sent) names the DID that signed.
func (c *Client) awaitSASLSuccess(ctx context.Context, res *SASLResult) error {
	succeeded := false
	for !succeeded || res.Token == "" {
		msg, err := c.readSASLReply(ctx, &res.Lines)
		if err != nil {
			return fmt.Errorf("ircclient: waiting for SASL success: %w", err)
		}
		switch msg.Command {
		case "900":
			if did := msg.Param(2); did != res.DID {
				return fmt.Errorf("%w: logged in as %q, signed as %q", ErrSASLFailed, did, res.DID)
			}
		case "903":
			succeeded = true
		case "NOTICE":
			if text := msg.Param(len(msg.Params) - 1); strings.HasPrefix(text, bearerPrefix) {
				res.Token = strings.TrimSpace(strings.TrimPrefix(text, bearerPrefix))
			}
		}
	}
	return nil
}

// readSASLReply reads the next message, answering PINGs and turning SASL
// failure numerics and ERROR into errors wrapping ErrSASLFailed.
func (c *Client) readSASLReply(ctx context.Context, lines *[]ircmsg.Message) (ircmsg.Message, error) {
	msg, err := c.ReadMessage(ctx)
	if err != nil {
		return msg, err
	}
	*lines = append(*lines, msg)
	switch msg.Command {
	case "PING":
		if err := c.pong(msg); err != nil {
			return msg, err
		}
	case "902", "904", "905", "906", "907", "908", "ERROR":
		return msg, fmt.Errorf("%w: %s %s", ErrSASLFailed, msg.Command, msg.Param(len(msg.Params)-1))
	}
	return msg, nil
}

// saslChunks splits an encoded AUTHENTICATE payload into 400-byte pieces;
// a payload that is empty or a whole number of pieces ends with "+".
func saslChunks(payload string) []string {
	chunks := make([]string, 0, len(payload)/saslChunkSize+1)
	for len(payload) >= saslChunkSize {
		chunks = append(chunks, payload[:saslChunkSize])
		payload = payload[saslChunkSize:]
	}
	if payload == "" {
		return append(chunks, "+")
	}
	return append(chunks, payload)
}

// decodeBase64URL decodes base64url with or without padding (servers must
// send it unpadded; being lenient on receipt costs nothing).
func decodeBase64URL(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// LoginSASL performs a complete authenticated registration: CAP LS 302,
// CAP REQ :sasl message-tags (plus extraCaps), NICK, USER, the
// ATPROTO-CHALLENGE exchange, CAP END, and waits for 001. The result's
// Lines hold every line read from the start through 001.
func (c *Client) LoginSASL(ctx context.Context, s Signer, nick string, extraCaps ...string) (SASLResult, error) {
	var lines []ircmsg.Message
	caps := append([]string{"sasl", "message-tags"}, extraCaps...)
	if err := c.negotiateCaps(ctx, caps, &lines); err != nil {
		return SASLResult{Lines: lines}, err
	}
	if err := c.sendUser(nick); err != nil {
		return SASLResult{Lines: lines}, err
	}
	res, err := c.AuthenticateSASL(ctx, s)
	res.Lines = append(lines, res.Lines...)
	if err != nil {
		return res, err
	}
	if _, err := c.finishRegistration(ctx, &res.Lines); err != nil {
		return res, err
	}
	return res, nil
}
