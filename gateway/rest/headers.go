package rest

import (
	"bufio"
	"net"
	"net/http"

	"github.com/gin-gonic/gin"
)

// Header values set on every response (freeq-reference §3.1).
const (
	contentSecurityPolicy = "default-src 'self'; script-src 'self' blob:; style-src 'self' 'unsafe-inline'; " +
		"img-src 'self' https: data: blob:; media-src 'self' https: blob:; connect-src 'self' wss: https:; " +
		"worker-src 'self' blob:; frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'"
	strictTransportSecurity = "max-age=63072000; includeSubDomains; preload"
	discoveryLink           = `</api/v1/openapi.json>; rel="service-desc"; type="application/json", ` +
		`</llms.txt>; rel="describedby"; type="text/markdown", ` +
		`</agents.md>; rel="alternate"; type="text/markdown"`
	// defaultRetryAfter is the Retry-After, in seconds, of a 429 whose
	// handler did not set one.
	defaultRetryAfter = "60"
)

// responseHeaders sets the fixed headers and wraps the writer so that the
// status-dependent ones are added just before the header is sent.
func (s *Server) responseHeaders(c *gin.Context) {
	c.Set(baseURLKey, s.baseURL(c))
	h := c.Writer.Header()
	setSecurityHeaders(h)
	h.Set("Link", discoveryLink)
	c.Writer = &headerFinisher{ResponseWriter: c.Writer, wwwAuthenticate: s.wwwAuthenticate(c)}
	c.Next()
}

// headerFinisher completes the response header at the moment it is sent:
// the default Content-Security-Policy when the handler set none,
// WWW-Authenticate on 401 and Retry-After on 429, each only if absent.
//
// gin's writer sends the header from WriteHeaderNow, Write, WriteString,
// Flush and (for a WebSocket upgrade) before Hijack, so each is intercepted;
// its Write calls its own WriteHeaderNow directly, which is why the hook
// cannot live in WriteHeaderNow alone.
type headerFinisher struct {
	gin.ResponseWriter
	wwwAuthenticate string
}

func (w *headerFinisher) finish() {
	if w.Written() {
		return
	}
	h := w.Header()
	if h.Get("Content-Security-Policy") == "" {
		h.Set("Content-Security-Policy", contentSecurityPolicy)
	}
	switch w.Status() {
	case http.StatusUnauthorized:
		if h.Get("WWW-Authenticate") == "" {
			h.Set("WWW-Authenticate", w.wwwAuthenticate)
		}
	case http.StatusTooManyRequests:
		if h.Get("Retry-After") == "" {
			h.Set("Retry-After", defaultRetryAfter)
		}
	}
}

func (w *headerFinisher) WriteHeaderNow() {
	w.finish()
	w.ResponseWriter.WriteHeaderNow()
}

func (w *headerFinisher) Write(p []byte) (int, error) {
	w.finish()
	return w.ResponseWriter.Write(p)
}

func (w *headerFinisher) WriteString(s string) (int, error) {
	w.finish()
	return w.ResponseWriter.WriteString(s)
}

func (w *headerFinisher) Flush() {
	w.finish()
	w.ResponseWriter.Flush()
}

func (w *headerFinisher) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.finish()
	return w.ResponseWriter.Hijack()
}
