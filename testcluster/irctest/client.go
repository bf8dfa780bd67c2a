package irctest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
	"github.com/palaver-chat/palaver/testcluster/poll"
)

// Timeout bounds each dial, login and wait of a test's client.
const Timeout = 30 * time.Second

// Node is what the helpers need of a running node.
type Node interface {
	IRCAddr() string
	TLSAddr() string
	HTTPAddr() string
	Machine() *fsm.Machine
}

// Clock is a settable clock (for SASL challenge lifetimes): the time now plus what Advance added.
type Clock struct{ offset atomic.Int64 }

// Now is the clock's time.
func (c *Clock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// Ctx is a context of Timeout, cancelled when tb ends.
func Ctx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	tb.Cleanup(cancel)
	return ctx
}

// Dial connects to n's IRC port over TCP; the connection closes when tb ends.
func Dial(tb testing.TB, n Node) *ircclient.Client {
	tb.Helper()
	c, err := ircclient.Dial(Ctx(tb), n.IRCAddr())
	return closing(tb, "dial", c, err)
}

// DialTLS connects to n's IRC-over-TLS port (its certificate unchecked).
func DialTLS(tb testing.TB, n Node) *ircclient.Client {
	tb.Helper()
	c, err := ircclient.DialTLS(Ctx(tb), n.TLSAddr(), &tls.Config{InsecureSkipVerify: true})
	return closing(tb, "dial tls", c, err)
}

// DialWS connects to n's IRC over WebSocket (ws://<http>/irc).
func DialWS(tb testing.TB, n Node) *ircclient.Client {
	tb.Helper()
	c, err := ircclient.DialWebSocket(Ctx(tb), "ws://"+n.HTTPAddr()+"/irc")
	return closing(tb, "dial websocket", c, err)
}

func closing(tb testing.TB, what string, c *ircclient.Client, err error) *ircclient.Client {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// NewEd25519 is a signer of a fresh ed25519 did:key.
func NewEd25519(tb testing.TB) ircclient.Signer {
	tb.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return ircclient.NewEd25519Signer(priv)
}

// NewSecp256k1 is a signer of a fresh secp256k1 did:key.
func NewSecp256k1(tb testing.TB) ircclient.Signer {
	tb.Helper()
	priv, err := secp256k1.GeneratePrivateKey()
	if err != nil {
		tb.Fatal(err)
	}
	return ircclient.NewSecp256k1Signer(priv)
}

// Login connects over TCP and logs in as nick with a fresh ed25519 did:key, requesting caps.
func Login(tb testing.TB, n Node, nick string, caps ...string) (*ircclient.Client, ircclient.SASLResult) {
	tb.Helper()
	return LoginAs(tb, n, NewEd25519(tb), nick, caps...)
}

// LoginAs connects over TCP and logs in as nick with the did:key of s.
func LoginAs(tb testing.TB, n Node, s ircclient.Signer, nick string, caps ...string) (*ircclient.Client, ircclient.SASLResult) {
	tb.Helper()
	c := Dial(tb, n)
	res, err := c.LoginSASL(Ctx(tb), s, nick, caps...)
	if err != nil {
		tb.Fatalf("login %s: %v", nick, err)
	}
	return c, res
}

// Challenge asks for a SASL ATPROTO-CHALLENGE and returns its decoded bytes.
func Challenge(tb testing.TB, c *ircclient.Client) []byte {
	tb.Helper()
	SendLines(tb, c, "AUTHENTICATE ATPROTO-CHALLENGE")
	m := Expect(tb, c, "AUTHENTICATE")
	raw, err := base64.RawURLEncoding.DecodeString(m.Param(0))
	if err != nil {
		tb.Fatalf("challenge encoding: %v", err)
	}
	return raw
}

// SASLResponse builds the base64url payload of a crypto-method response.
func SASLResponse(tb testing.TB, did string, sig []byte) string {
	tb.Helper()
	body, err := json.Marshal(map[string]string{"did": did, "signature": base64.RawURLEncoding.EncodeToString(sig), "method": "crypto"})
	if err != nil {
		tb.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(body)
}

// Sign signs msg with s.
func Sign(tb testing.TB, s ircclient.Signer, msg []byte) []byte {
	tb.Helper()
	sig, err := s.Sign(msg)
	if err != nil {
		tb.Fatal(err)
	}
	return sig
}

// HTTPDo performs a request with an optional bearer token (and a JSON body when body is set),
// and returns the response with its body read.
func HTTPDo(tb testing.TB, method, url, token string, body io.Reader) (*http.Response, []byte) {
	tb.Helper()
	req, err := http.NewRequestWithContext(Ctx(tb), method, url, body)
	if err != nil {
		tb.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp, data
}

// SessionGone waits until no session uses nick in n's replicated state.
func SessionGone(tb testing.TB, n Node, nick string) {
	tb.Helper()
	poll.Until(tb, "the session of "+nick+" to end", func() bool {
		gone := true
		n.Machine().Read(func(st *fsm.State) { gone = !st.NickInUse(nick) })
		return gone
	})
}

// Quit sends QUIT and waits for the server to close the session of nick.
func Quit(tb testing.TB, n Node, c *ircclient.Client, nick string) {
	tb.Helper()
	SendLines(tb, c, "QUIT :done")
	Expect(tb, c, "ERROR")
	SessionGone(tb, n, nick)
}

func token(prefix string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}
