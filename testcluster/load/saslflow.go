package load

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// saslChunkSize is the IRCv3 AUTHENTICATE payload chunk length.
const saslChunkSize = 400

// bearerPrefix starts the NOTICE text that carries the REST bearer token.
const bearerPrefix = "API-BEARER "

// loginError says at which step a login failed.
type loginError struct {
	stage string // connect, caps, sasl, register
	err   error
}

func (e *loginError) Error() string { return e.stage + ": " + e.err.Error() }
func (e *loginError) Unwrap() error { return e.err }

// saslLogin runs the login steps up to 001, asking for the capabilities
// in caps along with sasl.
func saslLogin(ctx context.Context, conn lineConn, id *identity, nick string, caps ...string) error {
	if err := conn.writeLines(ctx, "CAP LS 302"); err != nil {
		return &loginError{"caps", err}
	}
	if _, err := readUntil(ctx, conn, nil, func(m ircmsg.Message) bool {
		return m.Command == "CAP" && m.Param(1) == "LS" && m.Param(2) != "*"
	}); err != nil {
		return &loginError{"caps", err}
	}
	if err := conn.writeLines(ctx, "CAP REQ :"+strings.Join(append([]string{"sasl"}, caps...), " ")); err != nil {
		return &loginError{"caps", err}
	}
	ack, err := readUntil(ctx, conn, nil, func(m ircmsg.Message) bool {
		return m.Command == "CAP" && (m.Param(1) == "ACK" || m.Param(1) == "NAK")
	})
	if err != nil {
		return &loginError{"caps", err}
	}
	if ack.Param(1) == "NAK" {
		return &loginError{"caps", fmt.Errorf("%w: CAP NAK %s", ErrRefused, ack.Param(2))}
	}
	if err := authenticate(ctx, conn, id); err != nil {
		return &loginError{"sasl", err}
	}
	if err := conn.writeLines(ctx, "NICK "+nick, "USER "+nick+" 0 * :"+nick, "CAP END"); err != nil {
		return &loginError{"register", err}
	}
	if _, err := readUntil(ctx, conn, registrationFailures, isCommand("001")); err != nil {
		return &loginError{"register", err}
	}
	return nil
}

// authenticate runs the ATPROTO-CHALLENGE exchange up to 903 and the
// API-BEARER NOTICE.
func authenticate(ctx context.Context, conn lineConn, id *identity) error {
	if err := conn.writeLines(ctx, "AUTHENTICATE ATPROTO-CHALLENGE"); err != nil {
		return err
	}
	var encoded strings.Builder
	for {
		m, err := readUntil(ctx, conn, saslFailures, isCommand("AUTHENTICATE"))
		if err != nil {
			return fmt.Errorf("waiting for the challenge: %w", err)
		}
		chunk := m.Param(0)
		if chunk != "+" {
			encoded.WriteString(chunk)
		}
		if len(chunk) < saslChunkSize {
			break
		}
	}
	challenge, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(encoded.String(), "="))
	if err != nil {
		return fmt.Errorf("decoding the challenge: %w", err)
	}
	sig, err := id.signer.Sign(challenge)
	if err != nil {
		return fmt.Errorf("signing the challenge: %w", err)
	}
	// The DID and a base64url signature need no JSON escaping.
	body := `{"did":"` + id.did + `","signature":"` + base64.RawURLEncoding.EncodeToString(sig) + `","method":"crypto"}`
	if err := conn.writeLines(ctx, authenticateLines(base64.RawURLEncoding.EncodeToString([]byte(body)))...); err != nil {
		return err
	}
	succeeded, bearer := false, false
	for !succeeded || !bearer {
		m, err := readUntil(ctx, conn, saslFailures, func(m ircmsg.Message) bool {
			return m.Command == "903" || m.Command == "NOTICE"
		})
		if err != nil {
			return fmt.Errorf("waiting for 903 and the bearer token: %w", err)
		}
		if m.Command == "903" {
			succeeded = true
		} else if strings.HasPrefix(m.Param(len(m.Params)-1), bearerPrefix) {
			bearer = true
		}
	}
	return nil
}

// authenticateLines splits an encoded payload into AUTHENTICATE lines of
// 400-byte chunks; a payload that is a whole number of chunks (or empty)
// ends with "AUTHENTICATE +".
func authenticateLines(payload string) []string {
	lines := make([]string, 0, len(payload)/saslChunkSize+1)
	for len(payload) >= saslChunkSize {
		lines = append(lines, "AUTHENTICATE "+payload[:saslChunkSize])
		payload = payload[saslChunkSize:]
	}
	if payload == "" {
		return append(lines, "AUTHENTICATE +")
	}
	return append(lines, "AUTHENTICATE "+payload)
}

// drainUntilClosed reads until the server closes the connection and says
// whether that happened before ctx ended.
func drainUntilClosed(ctx context.Context, conn lineConn) bool {
	for {
		if _, err := conn.readLine(ctx); err != nil {
			return errors.Is(err, io.EOF)
		}
	}
}
