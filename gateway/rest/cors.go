package rest

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"
)

const (
	corsAllowMethods  = "GET, POST, PUT, OPTIONS"
	corsAllowHeaders  = "Content-Type, Authorization"
	corsExposeHeaders = "Link, Retry-After, WWW-Authenticate, Deprecation, Sunset"
	corsMaxAge        = "600"
)

// originPolicy decides which browser origins may call the API.
type originPolicy struct {
	allowed map[string]bool // normalized "scheme://host[:port]"
}

func newOriginPolicy(origins []string) originPolicy {
	p := originPolicy{allowed: make(map[string]bool, len(origins))}
	for _, o := range origins {
		if norm, ok := normalizeOrigin(o); ok {
			p.allowed[norm] = true
		}
	}
	return p
}

// allows reports whether origin may make credentialed cross-origin calls:
// a configured origin, or http(s) on localhost or 127.0.0.1 at any port.
func (p originPolicy) allows(origin string) bool {
	norm, ok := normalizeOrigin(origin)
	if !ok {
		return false
	}
	u, _ := url.Parse(norm)
	if h := u.Hostname(); h == "localhost" || h == "127.0.0.1" {
		return true
	}
	return p.allowed[norm]
}

// allowsWebSocket admits the configured origins (BaseURL's and the allowed
// list) and, with local, http(s) pages on localhost, 127.0.0.1 or [::1] at
// any port. The request's Host is never compared with the origin: a
// DNS-rebinding page names its own host in both.
func (p originPolicy) allowsWebSocket(origin string, local bool) bool {
	norm, ok := normalizeOrigin(origin)
	if !ok {
		return false
	}
	if p.allowed[norm] {
		return true
	}
	u, _ := url.Parse(norm)
	return local && isLoopbackHost(u.Hostname())
}

// isLoopbackHost reports whether a URL host names this machine.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsLocalOrigin reports whether a base URL is an http(s) origin on
// localhost or a loopback address.
func IsLocalOrigin(baseURL string) bool {
	norm, ok := normalizeOrigin(strings.TrimRight(baseURL, "/"))
	if !ok {
		return false
	}
	u, _ := url.Parse(norm)
	return isLoopbackHost(u.Hostname())
}

// normalizeOrigin lowercases scheme and host and drops a default port. It
// refuses anything that is not a bare http(s) origin.
func normalizeOrigin(origin string) (string, bool) {
	u, err := url.Parse(strings.TrimRight(origin, "/"))
	if err != nil || u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", false
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", false
	}
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host, true
}

// cors answers preflight requests with 204 and marks allowed origins on
// every response. A refused origin simply gets no CORS headers, which the
// browser enforces.
func (s *Server) cors(c *gin.Context) {
	if s.corsExempt[c.FullPath()] {
		c.Next()
		return
	}
	h := c.Writer.Header()
	h.Add("Vary", "Origin")
	origin := c.GetHeader("Origin")
	allowed := origin != "" && s.origins.allows(origin)
	if allowed {
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
	}
	if c.Request.Method != http.MethodOptions {
		c.Next()
		return
	}
	if allowed {
		h.Set("Access-Control-Allow-Methods", corsAllowMethods)
		h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
		h.Set("Access-Control-Max-Age", corsMaxAge)
	}
	c.AbortWithStatus(http.StatusNoContent)
}

// ExemptFromCORS leaves the CORS headers and the OPTIONS answer of the
// given route templates (as registered, e.g. "/mcp") to their own handlers,
// for endpoints with a different cross-origin policy. Call it before the
// server handles requests; the route must register its own OPTIONS handler.
func (s *Server) ExemptFromCORS(routes ...string) {
	for _, r := range routes {
		s.corsExempt[r] = true
	}
}

// AllowsBrowserOrigin reports whether a page of origin may use the endpoints that check the
// Origin header themselves (WebSocket IRC, MCP): BaseURL's origin, the allowed list and, when
// the node itself is local, pages on localhost at any port.
func (s *Server) AllowsBrowserOrigin(origin string) bool {
	return s.origins.allowsWebSocket(origin, s.cfg.LocalWebSocketOrigins)
}
