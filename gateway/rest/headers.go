package rest

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

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
	hf := &headerFinisher{ResponseWriter: c.Writer, wwwAuthenticate: s.wwwAuthenticate(c)}
	if isAPIPath(c.Request.URL.Path) {
		hf.errorDocs = s.baseURL(c) + "/api/v1/openapi.json"
	}
	c.Writer = hf
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
//
// Under /api (errorDocs set) it also keeps every 4xx and 5xx the Error object: an error some
// handler wrote as something else (net/http's file server answers an unsatisfiable Range with a
// text/plain 416, a relayed upstream answer carries its own type) is replaced by the Error
// object, its text becoming the message, and the handler's own bytes are dropped.
type headerFinisher struct {
	gin.ResponseWriter
	wwwAuthenticate string
	errorDocs       string
	// replaced: the handler's error body is being dropped for the Error object.
	replaced bool
}

// finish completes the header before it is sent; first is the first body bytes the handler
// writes (nil from WriteHeaderNow, Flush or Hijack). It reports whether those bytes are to be
// dropped.
func (w *headerFinisher) finish(first []byte) bool {
	if w.Written() {
		return w.replaced
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
	if w.errorDocs != "" && w.Status() >= 400 && !isJSON(h.Get("Content-Type")) {
		w.replaced = true
		w.writeErrorObject(h, first)
	}
	return w.replaced
}

// writeErrorObject sends the Error object in place of a non-JSON error body.
func (w *headerFinisher) writeErrorObject(h http.Header, text []byte) {
	status := w.Status()
	msg := strings.TrimSpace(string(text))
	if msg == "" || len(msg) > maxReplacedMessage || !utf8.ValidString(msg) {
		msg = http.StatusText(status)
	}
	if status == http.StatusRequestedRangeNotSatisfiable {
		msg = "The requested range cannot be satisfied (" + msg + ")"
		if cr := h.Get("Content-Range"); cr != "" {
			msg += "; the resource is " + strings.TrimPrefix(cr, "bytes */") + " bytes long"
		}
	}
	body, _ := json.Marshal(ErrorObject{Error: http.StatusText(status), Status: status, Message: msg, Documentation: w.errorDocs})
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Del("Content-Encoding")
	h.Del("Content-Disposition")
	_, _ = w.ResponseWriter.Write(body)
}

// maxReplacedMessage bounds a handler's error text kept as the Error object's message.
const maxReplacedMessage = 200

func isJSON(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.TrimSpace(strings.ToLower(mt))
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

func (w *headerFinisher) WriteHeaderNow() {
	w.finish(nil)
	w.ResponseWriter.WriteHeaderNow()
}

func (w *headerFinisher) Write(p []byte) (int, error) {
	if w.finish(p) {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

func (w *headerFinisher) WriteString(s string) (int, error) {
	if w.finish([]byte(s)) {
		return len(s), nil
	}
	return w.ResponseWriter.WriteString(s)
}

func (w *headerFinisher) Flush() {
	w.finish(nil)
	w.ResponseWriter.Flush()
}

func (w *headerFinisher) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.finish(nil)
	return w.ResponseWriter.Hijack()
}
