package irc_test

// The harness of the black-box IRC tests: each test starts a real node (testcluster/nodetest) and
// talks to it over real sockets with testcluster/ircclient.

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
	"github.com/palaver-chat/palaver/testcluster/nodetest"
	"github.com/palaver-chat/palaver/testcluster/poll"
)

// testClock is a settable clock for SASL challenge lifetimes.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *testClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// Node and Config are the node's types under the names the IRC tests use.
type (
	Node   = node.Node
	Config = node.Config
)

// startNode starts a real node on loopback ports (IRC over TLS too) with its data in dir, closed
// when t ends.
func startNode(t *testing.T, dir string, mutate func(*Config)) *Node {
	t.Helper()
	return nodetest.StartIn(t, dir, func(cfg *Config) {
		cfg.TLSAddr = "127.0.0.1:0"
		if mutate != nil {
			mutate(cfg)
		}
	})
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func dial(t *testing.T, n *Node) *ircclient.Client {
	t.Helper()
	c, err := ircclient.Dial(testCtx(t), n.IRCAddr())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func dialTLS(t *testing.T, n *Node) *ircclient.Client {
	t.Helper()
	c, err := ircclient.DialTLS(testCtx(t), n.TLSAddr(), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("dial tls: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func dialWS(t *testing.T, n *Node) *ircclient.Client {
	t.Helper()
	c, err := ircclient.DialWebSocket(testCtx(t), "ws://"+n.HTTPAddr()+"/irc")
	if err != nil {
		t.Fatalf("dial websocket: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func newEd25519(t *testing.T) ircclient.Signer {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return ircclient.NewEd25519Signer(priv)
}

func newSecp256k1(t *testing.T) ircclient.Signer {
	priv, err := secp256k1.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	return ircclient.NewSecp256k1Signer(priv)
}

// login connects over TCP and logs in with a fresh ed25519 did:key.
func login(t *testing.T, n *Node, nick string, caps ...string) (*ircclient.Client, ircclient.SASLResult) {
	t.Helper()
	c := dial(t, n)
	res, err := c.LoginSASL(testCtx(t), newEd25519(t), nick, caps...)
	if err != nil {
		t.Fatalf("login %s: %v", nick, err)
	}
	return c, res
}

func loginAs(t *testing.T, n *Node, s ircclient.Signer, nick string, caps ...string) (*ircclient.Client, ircclient.SASLResult) {
	t.Helper()
	c := dial(t, n)
	res, err := c.LoginSASL(testCtx(t), s, nick, caps...)
	if err != nil {
		t.Fatalf("login %s: %v", nick, err)
	}
	return c, res
}

func guest(t *testing.T, n *Node, nick string, caps ...string) (*ircclient.Client, ircmsg.Message) {
	t.Helper()
	c := dial(t, n)
	w, err := c.Register(testCtx(t), nick, caps...)
	if err != nil {
		t.Fatalf("register %s: %v", nick, err)
	}
	return c, w
}

// expect waits for a line with the command whose parameters contain every want string.
func expect(t *testing.T, c *ircclient.Client, command string, want ...string) ircmsg.Message {
	t.Helper()
	m, err := c.Expect(testCtx(t), func(m ircmsg.Message) bool {
		if m.Command != command {
			return false
		}
		joined := strings.Join(m.Params, " ")
		for _, w := range want {
			if !strings.Contains(joined, w) {
				return false
			}
		}
		return true
	})
	if err != nil {
		t.Fatalf("waiting for %s %v: %v\nseen: %v", command, want, err, lastSeen(c))
	}
	return m
}

func lastSeen(c *ircclient.Client) []string {
	seen := c.Seen()
	if len(seen) > 15 {
		seen = seen[len(seen)-15:]
	}
	out := make([]string, 0, len(seen))
	for _, m := range seen {
		out = append(out, m.String())
	}
	return out
}

// syncClient sends a PING with a unique token and waits for its PONG: everything the server queued for
// this client before it is then read.
func syncClient(t *testing.T, c *ircclient.Client) {
	t.Helper()
	token := "sync-" + base64.RawURLEncoding.EncodeToString(randomBytes(6))
	if err := c.Send("PING " + token); err != nil {
		t.Fatal(err)
	}
	expect(t, c, "PONG", token)
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// challenge asks for a SASL challenge and returns its decoded bytes.
func challenge(t *testing.T, c *ircclient.Client) []byte {
	t.Helper()
	if err := c.Send("AUTHENTICATE ATPROTO-CHALLENGE"); err != nil {
		t.Fatal(err)
	}
	m := expect(t, c, "AUTHENTICATE")
	raw, err := base64.RawURLEncoding.DecodeString(m.Param(0))
	if err != nil {
		t.Fatalf("challenge encoding: %v", err)
	}
	return raw
}

// saslResponse builds the base64url payload of a crypto-method response.
func saslResponse(t *testing.T, did string, sig []byte) string {
	t.Helper()
	body, err := json.Marshal(map[string]string{"did": did, "signature": base64.RawURLEncoding.EncodeToString(sig), "method": "crypto"})
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(body)
}

func sign(t *testing.T, s ircclient.Signer, msg []byte) []byte {
	t.Helper()
	sig, err := s.Sign(msg)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// httpGet performs a GET with an optional bearer token.
func httpDo(t *testing.T, method, url, token string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}

// eventually polls cond until it holds or poll.Timeout passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, what, cond)
}

// expectCapLS reads a CAP LS reply to its last line (a 302 reply may continue over lines marked
// "*") and returns the first line and every capability offered.
func expectCapLS(t *testing.T, c *ircclient.Client) (first ircmsg.Message, caps []string) {
	t.Helper()
	for i := 0; ; i++ {
		m := expect(t, c, "CAP", "LS")
		if i == 0 {
			first = m
		}
		caps = append(caps, strings.Fields(m.Param(len(m.Params)-1))...)
		if m.Param(2) != "*" {
			return first, caps
		}
	}
}

// startCluster starts three clustered nodes on loopback: the first bootstraps, the others join it.
func startCluster(t *testing.T) []*Node {
	t.Helper()
	return startNamedCluster(t, "test", nil)
}

// startNamedCluster starts nodes node-a.<domain>, node-b.<domain> and node-c.<domain>, each
// configured by extra (when set) before it is made clustered, and waits for three live voters.
func startNamedCluster(t *testing.T, domain string, extra func(*Config)) []*Node {
	t.Helper()
	return nodetest.StartCluster(t, domain, func(c *Config) {
		c.TLSAddr = "127.0.0.1:0"
		if extra != nil {
			extra(c)
		}
	})
}

// expectSeen finds an already-read line by command.
func expectSeen(t *testing.T, c *ircclient.Client, command string) ircmsg.Message {
	t.Helper()
	for _, m := range c.Seen() {
		if m.Command == command {
			return m
		}
	}
	t.Fatalf("no %s seen: %v", command, lastSeen(c))
	return ircmsg.Message{}
}
