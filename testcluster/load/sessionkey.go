package load

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/signing"
)

// signingCaps are the capabilities a signing sender asks for: tags to send
// the signature with and to read the echo's msgid, the echo itself, and
// the time and account tags every benchmark message carries.
var signingCaps = []string{"message-tags", "echo-message", "server-time", "account-tag"}

// Client tags of a signed message (freeq-reference §2.3–2.5).
const (
	tagEventID = "+freeq.at/eventid" // the msgid the client minted and signed
	tagSig     = "+freeq.at/sig"     // ed25519:<kid>:<signature>
)

// sessionKey signs channel messages as a client does once it has
// registered a session key with MSGSIG: for each message it mints a ULID,
// builds the canonical document {from, msgid, target, body} and signs it.
// Nothing is computed ahead: each signature costs the client what it
// costs a real one. A sessionKey is used by one goroutine.
type sessionKey struct {
	did     string // the account DID the documents name as their author
	pub     ed25519.PublicKey
	priv    ed25519.PrivateKey
	kid     string
	entropy io.Reader // monotonic ULID entropy, not safe for concurrent use
}

func newSessionKey(did string) (*sessionKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("load: generating a session key: %w", err)
	}
	return &sessionKey{did: did, pub: pub, priv: priv, kid: signing.KID(pub), entropy: ulid.Monotonic(rand.Reader, 0)}, nil
}

// msgsigLine registers the key: MSGSIG <base64url public key>.
func (k *sessionKey) msgsigLine() string {
	return "MSGSIG " + base64.RawURLEncoding.EncodeToString(k.pub)
}

// signedPrivmsg mints a msgid and returns it, the sig tag value and the
// PRIVMSG line carrying both.
func (k *sessionKey) signedPrivmsg(channel string, venue signing.Venue, text string, now time.Time) (msgid, sig, line string, err error) {
	id, err := ulid.New(ulid.Timestamp(now), k.entropy)
	if err != nil {
		return "", "", "", fmt.Errorf("load: minting a msgid: %w", err)
	}
	msgid = id.String()
	canonical, err := signing.Message{Envelope: signing.Envelope{From: k.did, MsgID: msgid, Venue: venue}, Body: text}.Canonical()
	if err != nil {
		return "", "", "", fmt.Errorf("load: canonical document: %w", err)
	}
	sig = signing.FormatSigTag(k.kid, ed25519.Sign(k.priv, canonical))
	// Neither a ULID nor base64url needs tag-value escaping.
	line = "@" + tagEventID + "=" + msgid + ";" + tagSig + "=" + sig + " PRIVMSG " + channel + " :" + text
	return msgid, sig, line, nil
}

// signingSender is a SASL-authenticated connection with a registered
// session key, joined to its channel.
type signingSender struct {
	conn    lineConn
	key     *sessionKey
	channel string
	venue   signing.Venue
}

// setupSigningSender connects, logs in with SASL as id (asking for
// signingCaps), registers a fresh session key with MSGSIG and joins
// channel.
func setupSigningSender(ctx context.Context, d *dialer, id *identity, nick, channel string, timeout time.Duration) (*signingSender, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	venue, err := signing.ChannelVenue(channel)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	key, err := newSessionKey(id.did)
	if err != nil {
		return nil, err
	}
	conn, err := d.dial(ctx)
	if err != nil {
		return nil, &loginError{"connect", err}
	}
	s := &signingSender{conn: conn, key: key, channel: channel, venue: venue}
	if err := s.setup(ctx, id, nick); err != nil {
		conn.close()
		return nil, err
	}
	return s, nil
}

func (s *signingSender) setup(ctx context.Context, id *identity, nick string) error {
	if err := saslLogin(ctx, s.conn, id, nick, signingCaps...); err != nil {
		return err
	}
	if err := s.conn.writeLines(ctx, s.key.msgsigLine()); err != nil {
		return &loginError{"msgsig", err}
	}
	if _, err := readUntil(ctx, s.conn, []string{"FAIL"}, func(m ircmsg.Message) bool {
		return m.Command == "MSGSIG" && m.Param(0) == "OK"
	}); err != nil {
		return &loginError{"msgsig", err}
	}
	if err := s.conn.writeLines(ctx, "JOIN "+s.channel); err != nil {
		return &loginError{"join", err}
	}
	if _, err := readUntil(ctx, s.conn, joinFailures, isCommand("366")); err != nil {
		return &loginError{"join", fmt.Errorf("joining %s: %w", s.channel, err)}
	}
	return nil
}
