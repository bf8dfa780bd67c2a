package rest

import (
	"slices"
	"time"
)

// What the server publishes about itself for the surfaces that describe it
// (discovery documents, MCP): the served contract document, the limits it
// enforces and the retired versions, plus a per-client limiter for
// surfaces that count units of work other than HTTP requests.

// ContractJSON is the served contract document as JSON: the embedded
// document with every fragment merged in, pruned to the mounted routes. It
// is built on first use, so call it only once every route is mounted (when
// serving a request, not while mounting).
func (s *Server) ContractJSON() ([]byte, error) {
	doc, _, err := s.openapi.encoded()
	return doc, err
}

// RetiredVersions lists the major versions announced for removal (Retire).
func (s *Server) RetiredVersions() []RetiredVersion { return slices.Clone(s.retired) }

// PageLimit is a paged route's default and maximum page size.
type PageLimit struct{ Default, Max int }

// Limits are the page sizes and per-client-IP rate limits the REST surface
// enforces.
type Limits struct {
	History, Search, Export, Evidence PageLimit
	// RateLimitsOff is true when the rate limits are switched off.
	RateLimitsOff bool
	// Records limits the record routes and the batch key lookup; Media the
	// upload, blob proxy, preview and space-media routes.
	Records, Media RateLimit
}

// Limits reports the limits this server enforces.
func (s *Server) Limits() Limits {
	page := func(l pageLimits) PageLimit { return PageLimit{Default: l.def, Max: l.max} }
	return Limits{
		History: page(historyLimits), Search: page(searchLimits), Export: page(exportLimits), Evidence: page(evidenceLimits),
		RateLimitsOff: s.cfg.RateLimits.Off,
		Records:       withDefault(s.cfg.RateLimits.Records, DefaultRecordLimit),
		Media:         withDefault(s.cfg.RateLimits.Media, DefaultMediaLimit),
	}
}

// Limiter is a per-client-IP fixed-window limit with the same keying as the
// route limiters (IPv6 counted per /64), for a surface that counts units
// of work inside one request, such as the entries of a JSON-RPC batch.
type Limiter struct{ fw *fixedWindow }

// NewLimiter makes a limiter of limit; zero fields take the record routes'
// defaults.
func NewLimiter(limit RateLimit) *Limiter {
	return &Limiter{fw: newFixedWindow(withDefault(limit, DefaultRecordLimit), time.Now)}
}

// Allow counts one unit of work for clientIP (as gin's ClientIP gives it)
// and reports whether it is within the limit; when not, retryAfter is the
// whole seconds until the window ends. A nil Limiter allows everything.
func (l *Limiter) Allow(clientIP string) (ok bool, retryAfter int) {
	if l == nil {
		return true, 0
	}
	return l.fw.allow(clientKey(clientIP))
}
