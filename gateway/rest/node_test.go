package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
	"github.com/palaver-chat/palaver/testcluster/irctest"
	"github.com/palaver-chat/palaver/testcluster/nodetest"
)

// Black-box tests: one real node (Raft, event store, IRC edge, REST) on
// loopback, shared by the tests of this file; each test uses its own
// channels and nicks. IRC clients create the channels, modes and messages,
// and every HTTP answer is checked against the contract document.

var (
	nodeOnce sync.Once
	theNode  *node.Node
	nodeErr  error
	nodeDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if theNode != nil {
		theNode.Close()
	}
	if nodeDir != "" {
		os.RemoveAll(nodeDir)
	}
	if benchCloser != nil {
		benchCloser()
	}
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// sharedNode starts the node on first use.
func sharedNode(t *testing.T) *node.Node {
	t.Helper()
	nodeOnce.Do(func() {
		nodeDir, nodeErr = os.MkdirTemp("", "palaver-rest-node-")
		if nodeErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		theNode, nodeErr = node.Start(ctx, node.LoopbackConfig(nodeDir), nodetest.Logger())
	})
	if nodeErr != nil {
		t.Fatalf("starting the node: %v", nodeErr)
	}
	return theNode
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// ircUser is a connected IRC client with its identity.
type ircUser struct {
	*ircclient.Client
	nick, did, token string
}

var ircCaps = []string{"message-tags", "echo-message"}

// loginUser connects and logs in with a fresh ed25519 did:key.
func loginUser(t *testing.T, n *node.Node, nick string, caps ...string) *ircUser {
	t.Helper()
	c, res := irctest.Login(t, n, nick, caps...)
	return &ircUser{Client: c, nick: nick, did: res.DID, token: res.Token}
}

func guestUser(t *testing.T, n *node.Node, nick string, caps ...string) *ircUser {
	t.Helper()
	c, _ := irctest.Guest(t, n, nick, caps...)
	return &ircUser{Client: c, nick: nick}
}

func (u *ircUser) send(t *testing.T, lines ...string) {
	t.Helper()
	irctest.SendLines(t, u.Client, lines...)
}

// expect waits for a line of command whose parameters contain want.
func (u *ircUser) expect(t *testing.T, command string, want ...string) ircmsg.Message {
	t.Helper()
	return irctest.Expect(t, u.Client, command, want...)
}

// sync sends a PING and waits for its PONG: every line sent before has
// been handled.
func (u *ircUser) sync(t *testing.T) {
	t.Helper()
	irctest.Sync(t, u.Client)
}

// join joins and waits for the end of NAMES.
func (u *ircUser) join(t *testing.T, channel string) {
	t.Helper()
	u.send(t, "JOIN "+channel)
	u.expect(t, "366", strings.ToLower(channel))
}

// say sends a PRIVMSG (with raw tags, if any) and returns the msgid of its
// echo.
func (u *ircUser) say(t *testing.T, target, text string, tags ...string) string {
	t.Helper()
	prefix := ""
	if len(tags) > 0 {
		prefix = "@" + strings.Join(tags, ";") + " "
	}
	u.send(t, prefix+"PRIVMSG "+target+" :"+text)
	echo := u.expect(t, "PRIVMSG", text)
	if echo.Tags["msgid"] == "" {
		t.Fatalf("echo without msgid: %s", echo.String())
	}
	return echo.Tags["msgid"]
}

// api performs a request against the node and checks it against the
// contract document.
type api struct {
	t        *testing.T
	base     string
	contract *contract
}

func newAPI(t *testing.T, n *node.Node) *api {
	return &api{t: t, base: "http://" + n.HTTPAddr(), contract: loadContract(t)}
}

func (a *api) do(method, path, token string, body []byte, header ...string) (*http.Response, []byte) {
	a.t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctxFor(a.t), method, a.base+path, r)
	if err != nil {
		a.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	if resp.StatusCode >= 500 {
		a.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	checkSecurityHeaders(a.t, method+" "+path, resp.Header)
	a.contract.check(a.t, req, resp, data)
	return resp, data
}

func (a *api) get(path, token string) (*http.Response, []byte) {
	a.t.Helper()
	return a.do("GET", path, token, nil)
}

func (a *api) getJSON(path, token string, v any) {
	a.t.Helper()
	resp, body := a.get(path, token)
	if resp.StatusCode != http.StatusOK {
		a.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		a.t.Fatalf("GET %s: %v in %s", path, err, body)
	}
}

func (a *api) status(path, token string) int {
	a.t.Helper()
	resp, _ := a.get(path, token)
	return resp.StatusCode
}

// checkSecurityHeaders insists on the headers every response carries.
func checkSecurityHeaders(t *testing.T, what string, h http.Header) {
	t.Helper()
	for name, want := range map[string]string{
		"X-Frame-Options":           "DENY",
		"X-Content-Type-Options":    "nosniff",
		"Referrer-Policy":           "strict-origin-when-cross-origin",
		"Strict-Transport-Security": "max-age=63072000; includeSubDomains; preload",
	} {
		if got := h.Get(name); got != want {
			t.Errorf("%s: %s = %q, want %q", what, name, got, want)
		}
	}
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("%s: Content-Security-Policy %q", what, csp)
	}
}
