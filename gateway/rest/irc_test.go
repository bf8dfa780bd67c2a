package rest_test

import (
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

// ircEcho answers every line with "<kind> <remote ip> <line>".
func ircEcho(c transport.Conn) {
	ip := c.RemoteAddr().(*net.TCPAddr).IP.String()
	for {
		line, err := c.ReadLine()
		if errors.Is(err, transport.ErrLineTooLong) {
			continue
		}
		if err != nil {
			return
		}
		if c.WriteLines([][]byte{[]byte(c.Kind() + " " + ip + " " + string(line) + "\r\n")}) != nil {
			return
		}
	}
}

func startIRCServer(t *testing.T, limit int) string {
	t.Helper()
	return startIRCServerWith(t, func(c *rest.Config) { c.IRCLimiter = transport.NewIPLimiter(limit) })
}

// startIRCServerWith serves IRC over WebSocket (echoing) on a real listener
// with the server's own http.Server, limits and listener wrapping.
func startIRCServerWith(t *testing.T, adjust func(*rest.Config)) string {
	t.Helper()
	ts := newTestServer(t, func(c *rest.Config) {
		c.IRC = ircEcho
		adjust(c)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := ts.HTTPServer(context.Background())
	go srv.Serve(rest.SecurityHeadersListener(ln))
	t.Cleanup(func() { srv.Close() })
	return "ws://" + ln.Addr().String() + "/irc"
}

func dialIRC(t *testing.T, url string, header http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: header})
	if c != nil {
		t.Cleanup(func() { c.CloseNow() })
	}
	return c, resp, err
}

func exchange(t *testing.T, c *websocket.Conn, line, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(line)); err != nil {
		t.Fatal(err)
	}
	typ, got, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if typ != websocket.MessageText || string(got) != want {
		t.Fatalf("got %v %q, want %q", typ, got, want)
	}
}

func TestIRCOverWebSocket(t *testing.T) {
	url := startIRCServer(t, 20)
	c, resp, err := dialIRC(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("upgrade response lacks security headers: %v", resp.Header)
	}
	exchange(t, c, "CAP LS 302", "websocket 127.0.0.1 CAP LS 302")
	exchange(t, c, "NICK a\r\n", "websocket 127.0.0.1 NICK a")
}

func TestIRCOrigins(t *testing.T) {
	tests := []struct {
		origin     string
		local      bool // LocalWebSocketOrigins
		wantStatus int
	}{
		{testBaseURL, false, http.StatusSwitchingProtocols},
		{"https://auth.example.test", false, http.StatusSwitchingProtocols},
		{"https://evil.example.test", false, http.StatusForbidden},
		{"https://evil.example.test", true, http.StatusForbidden},
		{"http://localhost:5173", false, http.StatusForbidden},
		{"http://localhost:5173", true, http.StatusSwitchingProtocols},
		{"http://127.0.0.1:1", true, http.StatusSwitchingProtocols},
		{"http://[::1]:8080", true, http.StatusSwitchingProtocols},
		{"http://localhost.evil.test", true, http.StatusForbidden},
		{"null", true, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s local=%v", tt.origin, tt.local), func(t *testing.T) {
			url := startIRCServerWith(t, func(c *rest.Config) { c.LocalWebSocketOrigins = tt.local })
			_, resp, err := dialIRC(t, url, http.Header{"Origin": {tt.origin}})
			if resp == nil {
				t.Fatalf("no response: %v", err)
			}
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d (%v)", resp.StatusCode, tt.wantStatus, err)
			}
		})
	}
}

// TestIRCOriginIsNotComparedWithHost: a DNS-rebinding page names its own host in both Origin and
// Host; that does not make it same-origin.
func TestIRCOriginIsNotComparedWithHost(t *testing.T) {
	url := startIRCServerWith(t, func(c *rest.Config) {})
	_, resp, err := dialIRC(t, url, http.Header{"Origin": {"http://rebind.evil.test:8080"}, "Host": {"rebind.evil.test:8080"}})
	if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("rebinding origin: %v, %v", resp, err)
	}
	host := strings.TrimSuffix(strings.TrimPrefix(url, "ws://"), "/irc")
	_, resp, err = dialIRC(t, url, http.Header{"Origin": {"http://" + host}})
	if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("origin equal to the listener's host without the local allowance: %v, %v", resp, err)
	}
}

func TestIsLocalOrigin(t *testing.T) {
	for in, want := range map[string]bool{
		"http://127.0.0.1:8080": true, "http://localhost:8080/": true, "https://[::1]": true,
		"http://127.1.2.3": true, "https://chat.example.org": false, "http://10.0.0.1": false, "not a url": false,
	} {
		if got := rest.IsLocalOrigin(in); got != want {
			t.Errorf("IsLocalOrigin(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestIRCNeedsUpgrade(t *testing.T) {
	url := startIRCServer(t, 20)
	resp, err := http.Get("http" + strings.TrimPrefix(url, "ws"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired || resp.Header.Get("Upgrade") != "websocket" {
		t.Fatalf("status %d, Upgrade %q", resp.StatusCode, resp.Header.Get("Upgrade"))
	}
}

func TestIRCPerIPLimit(t *testing.T) {
	url := startIRCServer(t, 1)
	first, _, err := dialIRC(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	exchange(t, first, "PING", "websocket 127.0.0.1 PING")

	_, resp, err := dialIRC(t, url, nil)
	if err == nil || resp == nil {
		t.Fatalf("second connection admitted (err %v)", err)
	}
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	body, _ := io.ReadAll(resp.Body)
	var e rest.ErrorObject
	if err := json.Unmarshal(body, &e); err != nil || e.Status != http.StatusTooManyRequests || e.Error != "Too Many Requests" {
		t.Fatalf("429 body %q (%v)", body, err)
	}

	// Once the first connection ends its slot is free again; the server
	// notices the close asynchronously, so retry until a deadline.
	first.Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, resp, err := dialIRC(t, url, nil)
		if err == nil {
			exchange(t, c, "AGAIN", "websocket 127.0.0.1 AGAIN")
			return
		}
		if resp == nil || resp.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("slot not freed: %v", err)
		}
	}
}
