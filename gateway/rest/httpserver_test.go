package rest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/gateway/transport"
)

// TestIRCPerIPCountFollowsTrustedProxies: the IRC cap counts the TCP peer unless it is a trusted
// proxy, whose X-Real-IP then names the client.
func TestIRCPerIPCountFollowsTrustedProxies(t *testing.T) {
	for _, tt := range []struct {
		name       string
		trusted    []string
		wantSecond bool // a second client behind the same peer is admitted
		wantIP     string
	}{
		{"loopback not trusted by default", nil, false, "127.0.0.1"},
		{"trusted loopback proxy", []string{"127.0.0.1"}, true, "198.51.100.1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url := startIRCServerWith(t, func(c *rest.Config) {
				c.IRCLimiter = transport.NewIPLimiter(1)
				c.TrustedProxies = tt.trusted
			})
			first, _, err := dialIRC(t, url, http.Header{"X-Real-IP": {"198.51.100.1"}})
			if err != nil {
				t.Fatal(err)
			}
			exchange(t, first, "PING", "websocket "+tt.wantIP+" PING")
			second, resp, err := dialIRC(t, url, http.Header{"X-Real-IP": {"198.51.100.2"}})
			if (err == nil) != tt.wantSecond {
				t.Fatalf("second client admitted %v, want %v (%v)", err == nil, tt.wantSecond, resp)
			}
			if tt.wantSecond {
				exchange(t, second, "PING", "websocket 198.51.100.2 PING")
			}
		})
	}
}

// TestWebSocketOutlivesReadTimeout: the read deadline net/http sets for a request does not end
// the WebSocket the request became.
func TestWebSocketOutlivesReadTimeout(t *testing.T) {
	const readTimeout = 150 * time.Millisecond
	url := startIRCServerWith(t, func(c *rest.Config) {
		c.HTTPLimits = rest.HTTPLimits{ReadTimeout: readTimeout}
	})
	c, _, err := dialIRC(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	exchange(t, c, "NICK a", "websocket 127.0.0.1 NICK a")
	// Working through several timeouts, then idle through several more.
	start := time.Now()
	for i := 0; time.Since(start) < 4*readTimeout; i++ {
		exchange(t, c, fmt.Sprint("PING ", i), fmt.Sprint("websocket 127.0.0.1 PING ", i))
	}
	idle := time.NewTimer(4 * readTimeout)
	<-idle.C // the duration under test, not a synchronization
	exchange(t, c, "PING after", "websocket 127.0.0.1 PING after")
}

// rawServer serves a test server through its own http.Server on a real listener.
func rawServer(t *testing.T, limits rest.HTTPLimits) string {
	t.Helper()
	ts := newTestServer(t, func(c *rest.Config) { c.HTTPLimits = limits })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := ts.HTTPServer(context.Background())
	go srv.Serve(rest.SecurityHeadersListener(ln))
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// rawExchange writes request bytes on a new connection and reads one response.
func rawExchange(t *testing.T, addr, request string) (*http.Response, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	go io.WriteString(conn, request) // a refused request may not be read whole
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

func TestOwnErrorAnswersCarrySecurityHeaders(t *testing.T) {
	const limit = 4 << 10
	addr := rawServer(t, rest.HTTPLimits{MaxHeaderBytes: limit})
	big := func(n int) string { return "X-Big: " + strings.Repeat("a", n) + "\r\n" }
	tests := []struct {
		name       string
		request    string
		wantStatus int
		wantJSON   bool // the Error object
	}{
		{"headers over the limit", "GET /api/v1/health HTTP/1.1\r\nHost: x\r\n" + big(limit) + "\r\n", 431, true},
		{"headers over net/http's own limit", "GET /api/v1/health HTTP/1.1\r\nHost: x\r\n" + big(3*limit+8192) + "\r\n", 431, true},
		{"malformed request line", "GARBAGE\r\n\r\n", 400, true},
		{"malformed header", "GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", 400, true},
		{"missing Host", "GET / HTTP/1.1\r\n\r\n", 400, true},
		{"bad Content-Length", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", 400, true},
		{"malformed percent-escape in the path", "GET /api/v1/channels/%zz/history HTTP/1.1\r\nHost: x\r\n\r\n", 400, true},
		{"truncated percent-escape in the path", "GET /api/v1/users/a% HTTP/1.1\r\nHost: x\r\n\r\n", 400, true},
		{"unsupported Transfer-Encoding", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, true},
		{"unsupported version", "GET / HTTP/2.5\r\nHost: x\r\n\r\n", 505, true},
		{"unknown route under /api/v1", "GET /api/v1/nothing-here HTTP/1.1\r\nHost: x\r\n\r\n", 404, true},
		{"wrong method under /api/v1", "DELETE /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n", 405, true},
		{"within the limit", "GET /api/v1/health HTTP/1.1\r\nHost: x\r\n" + big(limit/2) + "\r\n", 200, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := rawExchange(t, addr, tt.request)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d (%q)", resp.StatusCode, tt.wantStatus, body)
			}
			for _, h := range []string{"X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy", "Strict-Transport-Security", "Content-Security-Policy"} {
				if resp.Header.Get(h) == "" {
					t.Errorf("answer lacks %s: %v", h, resp.Header)
				}
			}
			if tt.wantJSON {
				var e rest.ErrorObject
				if err := json.Unmarshal([]byte(body), &e); err != nil || e.Status != tt.wantStatus ||
					e.Error != http.StatusText(tt.wantStatus) || e.Message == "" || e.Documentation == "" ||
					!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
					t.Fatalf("body %q (%s) is not the Error object (%v)", body, resp.Header.Get("Content-Type"), err)
				}
			}
		})
	}
}

// TestStalledRequestsEndAtReadTimeout: a client that stops sending in the middle of its headers
// or its body loses the connection once ReadTimeout passes.
func TestStalledRequestsEndAtReadTimeout(t *testing.T) {
	addr := rawServer(t, rest.HTTPLimits{ReadTimeout: 200 * time.Millisecond})
	for name, partial := range map[string]string{
		"headers": "GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: ",
		"body": "PUT /api/v1/favorites HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good-token\r\n" +
			"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n[\"#a\",",
	} {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, partial); err != nil {
				t.Fatal(err)
			}
			// The server gives up well before this deadline; reading then returns (an answer or
			// EOF) instead of timing out here.
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err = io.ReadAll(conn)
			var netErr net.Error
			if errors.As(err, &netErr) && netErr.Timeout() {
				t.Fatal("the server kept the stalled connection open")
			}
		})
	}
}

func TestWebSocketCloseOnInvalidUTF8(t *testing.T) {
	url := startIRCServerWith(t, func(c *rest.Config) {})
	c, _, err := dialIRC(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte("PRIVMSG #a :\xff\xfe")); err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Read(ctx)
	if got := websocket.CloseStatus(err); got != websocket.StatusInvalidFramePayloadData {
		t.Fatalf("close status %v (%v), want 1007", got, err)
	}
}

func TestValidTrustedProxy(t *testing.T) {
	for entry, ok := range map[string]bool{
		"127.0.0.1": true, "::1": true, "10.0.0.0/8": true, "2001:db8::/32": true,
		"": false, "localhost": false, "10.0.0.0/33": false, "10.0.0.1-10.0.0.9": false,
	} {
		if err := rest.ValidTrustedProxy(entry); (err == nil) != ok {
			t.Errorf("ValidTrustedProxy(%q) = %v, want ok %v", entry, err, ok)
		}
	}
}
