package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"
)

// HTTPLimits bounds what one client may hold of the public HTTP server.
// Zero fields take the defaults beside them.
type HTTPLimits struct {
	// ReadTimeout bounds reading a request, headers and body (30 s): a
	// stalled upload cannot hold its connection and buffers for longer.
	// WebSocket connections clear it once upgraded (see serveIRC).
	ReadTimeout time.Duration
	// ReadHeaderTimeout bounds reading the headers alone (10 s).
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long (120 s).
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the request line and headers (64 KiB). Up to
	// twice that, the answer is a 431 Error object with the security
	// headers; beyond it net/http refuses the request itself (see
	// SecurityHeadersListener).
	MaxHeaderBytes int
}

// Default HTTP limits.
const (
	DefaultReadTimeout       = 30 * time.Second
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultMaxHeaderBytes    = 64 << 10
)

func (l HTTPLimits) withDefaults() HTTPLimits {
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = DefaultReadTimeout
	}
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = min(DefaultReadHeaderTimeout, l.ReadTimeout)
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	return l
}

// HTTPServer returns the http.Server for this server's handler with the
// limits of cfg.HTTPLimits. base is every request's base context: cancelling
// it ends the WebSocket sessions too. Serve it on a listener wrapped by
// SecurityHeadersListener (and, for a per-client cap,
// transport.LimitListener).
func (s *Server) HTTPServer(base context.Context) *http.Server {
	l := s.cfg.HTTPLimits
	return &http.Server{
		Handler:           s.Handler(),
		ReadTimeout:       l.ReadTimeout,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		// net/http's own limit sits above ours so that most oversized
		// requests reach headerLimit and get a proper answer.
		MaxHeaderBytes: 2 * l.MaxHeaderBytes,
		ErrorLog:       slog.NewLogLogger(s.logger.Handler(), slog.LevelDebug),
		BaseContext:    func(net.Listener) context.Context { return base },
	}
}

// headerLimit answers 431 to a request whose request line and headers
// exceed HTTPLimits.MaxHeaderBytes, counted as net/http counts them on the
// wire (name, ": ", value and CRLF per header line).
func (s *Server) headerLimit(c *gin.Context) {
	r := c.Request
	size := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + 2 + len("Host: ") + len(r.Host) + 2
	for name, values := range r.Header {
		for _, v := range values {
			size += len(name) + 2 + len(v) + 2
		}
	}
	if limit := s.cfg.HTTPLimits.MaxHeaderBytes; size > limit {
		c.Header("Connection", "close")
		WriteError(c, http.StatusRequestHeaderFieldsTooLarge,
			"The request line and headers are "+strconv.Itoa(size)+" bytes; at most "+strconv.Itoa(limit)+" are read")
		return
	}
	c.Next()
}

// ValidTrustedProxy checks one Config.TrustedProxies entry: an IP address
// or a CIDR prefix.
func ValidTrustedProxy(entry string) error {
	if _, err := netip.ParseAddr(entry); err == nil {
		return nil
	}
	if _, err := netip.ParsePrefix(entry); err != nil {
		return fmt.Errorf("%q is neither an IP address nor a CIDR prefix", entry)
	}
	return nil
}

// setSecurityHeaders sets the headers every answer carries.
func setSecurityHeaders(h http.Header) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "strict-origin-when-cross-origin")
	h.Set("Strict-Transport-Security", strictTransportSecurity)
}

// SecurityHeadersListener wraps the HTTP listener so that the answers
// net/http writes itself, without calling a handler, carry the security
// headers and the Error object too: the 400 to a request it cannot parse
// (bad request line, a malformed percent-escape in the path, header syntax,
// Host or Content-Length), the 431 beyond twice MaxHeaderBytes, the 501 to
// an unsupported Transfer-Encoding and the 505 to an unsupported HTTP
// version. These are raised before routing, so the path is not known and
// every such answer is the Error object (its documentation link relative:
// the Host is not known either). net/http offers no hook for those: it
// writes each, in one Write on the connection, as a status line, exactly
// "Content-Type: text/plain; charset=utf-8" and "Connection: close", and a
// short text, then closes. The wrapped connection recognises that exact
// form and writes the answer anew. A handler's answer does not match it:
// net/http sends a handler's headers sorted and with Date. A body would
// have to carry that status line and those headers, with raw CR LF, as the
// last flush of its buffered writer (at most 512 bytes); the bodies served
// here are JSON, which escapes CR and LF, or text built from IRC lines,
// which cannot hold them.
func SecurityHeadersListener(ln net.Listener) net.Listener {
	return &securityHeadersListener{Listener: ln}
}

type securityHeadersListener struct{ net.Listener }

func (l *securityHeadersListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &securityHeadersConn{Conn: conn}, nil
}

// netHTTPErrorHeaders is what follows the status line of net/http's own
// error answers (net/http/server.go, errorHeaders).
const netHTTPErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// maxNetHTTPError bounds the answers recognised: net/http's are short.
const maxNetHTTPError = 512

var securityHeaderLines = func() string {
	h := http.Header{}
	setSecurityHeaders(h)
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	var b bytes.Buffer
	_ = h.Write(&b) // writing to a bytes.Buffer cannot fail
	return b.String()
}()

type securityHeadersConn struct{ net.Conn }

func (c *securityHeadersConn) Write(p []byte) (int, error) {
	if out, ok := withSecurityHeaders(p); ok {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// withSecurityHeaders returns, when p is one of net/http's own error
// answers, the same status as an Error object with the security headers.
func withSecurityHeaders(p []byte) ([]byte, bool) {
	if len(p) > maxNetHTTPError || !bytes.HasPrefix(p, []byte("HTTP/1.1 ")) {
		return nil, false
	}
	end := bytes.Index(p, []byte(netHTTPErrorHeaders))
	if end < 0 || bytes.IndexByte(p[:end], '\n') >= 0 || bytes.IndexByte(p[:end], '\r') >= 0 {
		return nil, false
	}
	statusLine := p[:end]
	code, err := strconv.Atoi(string(statusLine[len("HTTP/1.1 "):min(len("HTTP/1.1 ")+3, len(statusLine))]))
	if err != nil || code < 400 || code > 599 {
		return nil, false
	}
	text := strings.TrimSpace(string(bytes.ToValidUTF8(p[end+len(netHTTPErrorHeaders):], nil)))
	if text == "" {
		text = strconv.Itoa(code) + " " + http.StatusText(code)
	}
	body, _ := json.Marshal(ErrorObject{
		Error:         http.StatusText(code),
		Status:        code,
		Message:       "The request could not be read: " + text,
		Documentation: "/api/v1/openapi.json",
	})
	out := make([]byte, 0, len(statusLine)+len(securityHeaderLines)+len(body)+128)
	out = append(out, statusLine...)
	out = append(out, "\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\nContent-Length: "...)
	out = strconv.AppendInt(out, int64(len(body)), 10)
	out = append(out, "\r\n"...)
	out = append(out, securityHeaderLines...)
	out = append(out, "\r\n"...)
	out = append(out, body...)
	return out, true
}

// SyscallConn gives the socket beneath (it keeps no input of its own), so that
// an idle WebSocket can wait for input on it (transport.AcceptWebSocket).
func (c *securityHeadersConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

// CloseWrite half-closes when the wrapped connection can: net/http does so
// before closing a connection whose request it refused, so that the client
// reads the answer.
func (c *securityHeadersConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}
