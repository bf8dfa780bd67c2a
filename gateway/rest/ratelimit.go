package rest

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/node/clientaddr"
)

// Per-client-IP rate limits (freeq-reference §3.1). Each class of routes
// has its own fixed-window counter per client IP: at most Requests per
// Window, the window starting at multiples of Window since the Unix epoch.
// Over the limit the answer is 429 with Retry-After set to the seconds left
// in the window. The client IP is the TCP peer, or, when the peer is a
// configured trusted proxy, X-Real-IP, else the last untrusted
// X-Forwarded-For entry (gin's ClientIP as configured in newEngine). IPv6 clients are counted per /64.

// RateClass names a group of routes that share a limit.
type RateClass int

const (
	// RecordRoutes are the record routes, the batch signing-key lookup and
	// GET /api/v1/actors/{did}.
	RecordRoutes RateClass = iota
	// MediaRoutes are upload, the blob proxy, link previews and space media.
	MediaRoutes
	rateClasses
)

// RateLimit is one class's limit; zero fields take the class default.
type RateLimit struct {
	Requests int
	Window   time.Duration
}

// RateLimits configures the limiters.
type RateLimits struct {
	// Off disables every limit. For benchmarks only.
	Off bool
	// Records defaults to 60 requests per 60 s.
	Records RateLimit
	// Media defaults to 30 requests per 60 s, freeq's REST limiter.
	Media RateLimit
}

// Default limits.
var (
	DefaultRecordLimit = RateLimit{Requests: 60, Window: time.Minute}
	DefaultMediaLimit  = RateLimit{Requests: 30, Window: time.Minute}
)

// maxTrackedClients bounds the clients counted in one window; clients
// beyond it share one counter, so that a flood of addresses cannot grow
// memory without bound.
const maxTrackedClients = 1 << 16

// limiters holds one fixed-window limiter per class; nil when off.
type limiters [rateClasses]*fixedWindow

func newLimiters(cfg RateLimits, now func() time.Time) limiters {
	var l limiters
	if cfg.Off {
		return l
	}
	l[RecordRoutes] = newFixedWindow(withDefault(cfg.Records, DefaultRecordLimit), now)
	l[MediaRoutes] = newFixedWindow(withDefault(cfg.Media, DefaultMediaLimit), now)
	return l
}

func withDefault(l, def RateLimit) RateLimit {
	if l.Requests <= 0 {
		l.Requests = def.Requests
	}
	if l.Window <= 0 {
		l.Window = def.Window
	}
	return l
}

// RateLimit returns the middleware enforcing class's per-IP limit, for
// routes the contract rate-limits. With limits off it lets everything pass.
func (s *Server) RateLimit(class RateClass) gin.HandlerFunc {
	var fw *fixedWindow
	if class >= 0 && class < rateClasses {
		fw = s.limits[class]
	}
	return func(c *gin.Context) {
		if fw == nil {
			c.Next()
			return
		}
		ok, retry := fw.allow(clientKey(c.ClientIP()))
		if !ok {
			c.Header("Retry-After", strconv.Itoa(retry))
			WriteError(c, http.StatusTooManyRequests, "Too many requests from your address; retry in "+strconv.Itoa(retry)+" s")
			return
		}
		c.Next()
	}
}

// clientKey is the counted identity of a client IP (clientaddr.ParseKey: the address itself, or
// its /64 for IPv6, as the IRC connection cap counts). Unparseable input counts as one shared
// client.
func clientKey(ip string) string {
	key, ok := clientaddr.ParseKey(ip)
	if !ok {
		return "?"
	}
	return key.String()
}

// fixedWindow counts requests per key in the current window.
type fixedWindow struct {
	limit  RateLimit
	now    func() time.Time
	mu     sync.Mutex
	window int64 // index of the current window
	counts map[string]int
}

func newFixedWindow(limit RateLimit, now func() time.Time) *fixedWindow {
	return &fixedWindow{limit: limit, now: now, counts: make(map[string]int)}
}

// overflowKey is the shared counter of clients beyond maxTrackedClients.
const overflowKey = "overflow"

// allow counts a request of key and reports whether it is within the
// limit; when not, retryAfter is the whole seconds until the window ends.
func (f *fixedWindow) allow(key string) (ok bool, retryAfter int) {
	now := f.now()
	width := f.limit.Window.Nanoseconds()
	window := now.UnixNano() / width
	f.mu.Lock()
	defer f.mu.Unlock()
	if window != f.window {
		f.window = window
		if len(f.counts) > 1024 {
			f.counts = make(map[string]int) // give a past flood's memory back
		} else {
			clear(f.counts)
		}
	}
	if _, tracked := f.counts[key]; !tracked && len(f.counts) >= maxTrackedClients {
		key = overflowKey
	}
	if f.counts[key] >= f.limit.Requests {
		left := time.Duration((window+1)*width - now.UnixNano())
		return false, max(1, int((left+time.Second-1)/time.Second))
	}
	f.counts[key]++
	return true, 0
}
