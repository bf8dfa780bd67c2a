package node

import (
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/palaver-chat/palaver/gateway/rest"
)

// TestHTTPEdgeLimits: the node's HTTP listener caps connections per client, keeps WebSocket IRC
// past the request read timeout, and, bound to loopback with a local base URL, admits WebSocket
// pages from localhost at any port but not from elsewhere.
func TestHTTPEdgeLimits(t *testing.T) {
	const readTimeout = 200 * time.Millisecond
	n := startNode(t, t.TempDir(), func(c *Config) {
		c.MaxHTTPConnsPerIP = 2
		c.HTTPLimits = rest.HTTPLimits{ReadTimeout: readTimeout}
	})
	url := "ws://" + n.HTTPAddr() + "/irc"

	// Two WebSockets hold this client's two slots.
	irc := dialWS(t, n)
	if _, err := irc.Register(testCtx(t), "edgews"); err != nil {
		t.Fatalf("register: %v", err)
	}
	ctx := testCtx(t)
	second, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://localhost:5173"}}})
	if err != nil {
		t.Fatalf("second WebSocket from a localhost page: %v", err)
	}
	// A third connection is closed at accept.
	if c, _, err := websocket.Dial(ctx, url, nil); err == nil {
		c.CloseNow()
		t.Fatal("third connection admitted over the cap of 2")
	}
	second.Close(websocket.StatusNormalClosure, "")

	// The session outlives the read timeout many times over.
	idle := time.NewTimer(5 * readTimeout)
	<-idle.C // the duration under test, not a synchronization
	sendLines(t, irc, "PING edge")
	expect(t, irc, "PONG")

	// The freed slot serves a request again; a page of another origin is refused.
	var status int
	eventually(t, "a slot freed", func() bool {
		c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://evil.example"}}})
		if c != nil {
			c.CloseNow()
		}
		if resp != nil {
			status = resp.StatusCode
		}
		return err != nil && resp != nil
	})
	if status != http.StatusForbidden {
		t.Fatalf("WebSocket from another origin: status %d, want 403", status)
	}
}
