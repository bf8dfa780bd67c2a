package rest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"nhooyr.io/websocket"

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
	ts := newTestServer(t, func(c *rest.Config) {
		c.IRC = ircEcho
		c.IRCLimiter = transport.NewIPLimiter(limit)
	})
	srv := httptest.NewServer(ts.Handler())
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/irc"
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
	url := startIRCServer(t, 20)
	tests := []struct {
		origin     string
		wantStatus int
	}{
		{"http://localhost:5173", http.StatusSwitchingProtocols},
		{"https://auth.example.test", http.StatusSwitchingProtocols},
		{"https://evil.example.test", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.origin, func(t *testing.T) {
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
