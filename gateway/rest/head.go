package rest

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// serveHTTP is the server's http.Handler: the gin engine, with HEAD answered as GET without a
// body (RFC 9110 §9.3.2) on every route that has a GET and no HEAD of its own, media and
// documents included, whichever package mounted the route.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodHead || r.Header.Get("Upgrade") != "" || s.hasHEADRoute(r.URL) {
		s.engine.ServeHTTP(w, r)
		return
	}
	// A shallow copy: net/http keeps the original request, so it still knows the answer is to
	// a HEAD and sends no body whatever the handler writes.
	get := *r
	get.Method = http.MethodGet
	hw := &headWriter{w: w}
	s.engine.ServeHTTP(hw, &get)
	hw.finish()
}

// hasHEADRoute reports whether a route was mounted for HEAD itself on the request's path.
func (s *Server) hasHEADRoute(u *url.URL) bool {
	path := u.EscapedPath()
	for _, rt := range s.engine.Routes() {
		if rt.Method == http.MethodHead && routeMatches(rt.Path, path) {
			return true
		}
	}
	return false
}

// routeMatches matches a gin route template (":param" segments, a final "*rest") against a
// path.
func routeMatches(template, path string) bool {
	ts := strings.Split(strings.Trim(template, "/"), "/")
	ps := strings.Split(strings.Trim(path, "/"), "/")
	for i, t := range ts {
		if strings.HasPrefix(t, "*") {
			return true
		}
		if i >= len(ps) {
			return false
		}
		if !strings.HasPrefix(t, ":") && t != ps[i] {
			return false
		}
	}
	return len(ts) == len(ps)
}

// headWriter runs a GET handler for a HEAD: it keeps the status and headers, counts and drops
// the body, and sends the header when the handler is done, with the Content-Length the GET
// would have had when the handler set none.
type headWriter struct {
	w       http.ResponseWriter
	status  int
	written int64
}

func (h *headWriter) Header() http.Header { return h.w.Header() }

func (h *headWriter) WriteHeader(code int) {
	if h.status == 0 && code >= 200 {
		h.status = code
	}
}

func (h *headWriter) Write(p []byte) (int, error) {
	h.WriteHeader(http.StatusOK)
	h.written += int64(len(p))
	return len(p), nil
}

// Flush does nothing: the header goes out when the handler is done.
func (h *headWriter) Flush() {}

func (h *headWriter) finish() {
	if h.status == 0 {
		h.status = http.StatusOK
	}
	hdr := h.w.Header()
	if bodyAllowed(h.status) && hdr.Get("Content-Length") == "" && hdr.Get("Transfer-Encoding") == "" {
		hdr.Set("Content-Length", strconv.FormatInt(h.written, 10))
	}
	h.w.WriteHeader(h.status)
}

func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}
