package keyresolver

import (
	"context"
	"net"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"

	"github.com/palaver-chat/palaver/node/clientaddr"
)

// Per-client limits on fresh resolutions. A request made on behalf of an
// outside client (an HTTP caller, an IRC connection) names that client in
// its context with WithClient; each resolution that has to go to the network
// for it (not answered from the cache) takes one token from the client's
// bucket, and an empty bucket fails the resolution at once with
// ErrRateLimited. Requests without a client (the server's own work) are not
// limited.
const (
	// DefaultClientResolutions is the sustained rate of fresh resolutions
	// per client, per minute.
	DefaultClientResolutions = 20
	// DefaultClientBurst is how many fresh resolutions a client may make at once.
	DefaultClientBurst = 10
	// maxClients bounds the buckets kept; beyond it full buckets are dropped
	// and, if still full, every client shares one overflow bucket.
	maxClients = 1 << 14
)

type clientKey struct{}

// WithClient returns ctx naming the client a resolution is made for. An IP
// address (with or without a port) is counted by itself, an IPv6 address by
// its /64; any other string is used as given.
func WithClient(ctx context.Context, client string) context.Context {
	return context.WithValue(ctx, clientKey{}, normalizeClient(client))
}

// WithClientAddr is WithClient for a connection's remote address.
func WithClientAddr(ctx context.Context, addr net.Addr) context.Context {
	if addr == nil {
		return ctx
	}
	return WithClient(ctx, addr.String())
}

func clientFrom(ctx context.Context) (string, bool) {
	c, ok := ctx.Value(clientKey{}).(string)
	return c, ok
}

// normalizeClient is the counted identity of a client: clientaddr.ParseKey of an address, or
// the string as given.
func normalizeClient(client string) string {
	if key, ok := clientaddr.ParseKey(client); ok {
		return key.String()
	}
	return client
}

// clientLimits holds one token bucket per client.
type clientLimits struct {
	every    time.Duration
	burst    int
	mu       sync.Mutex
	byKey    map[string]*rate.Limiter
	overflow *rate.Limiter // shared by the clients beyond maxClients
	swept    time.Time     // last sweep of full buckets
}

func newClientLimits(perMinute, burst int) *clientLimits {
	every := time.Minute / time.Duration(perMinute)
	return &clientLimits{every: every, burst: burst, byKey: make(map[string]*rate.Limiter),
		overflow: rate.NewLimiter(rate.Every(every), burst)}
}

// allow takes a token of client's bucket at now.
func (l *clientLimits) allow(client string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.byKey[client]
	if b == nil {
		// A full bucket holds nothing worth keeping. Sweeping at most once
		// per refill interval keeps a flood of new clients from paying a
		// sweep each.
		if len(l.byKey) >= maxClients && now.Sub(l.swept) >= l.every {
			l.swept = now
			for k, old := range l.byKey {
				if old.TokensAt(now) >= float64(l.burst) {
					delete(l.byKey, k)
				}
			}
		}
		if len(l.byKey) >= maxClients {
			return l.overflow.AllowN(now, 1)
		}
		b = rate.NewLimiter(rate.Every(l.every), l.burst)
		l.byKey[client] = b
	}
	return b.AllowN(now, 1)
}

// maxLoggedDID bounds the part of a DID written into logs and errors.
const maxLoggedDID = 96

// ShortDID is did cut to at most 96 bytes (on a rune boundary, with "…"
// appended when cut), for logs and error texts: a DID may be 2 KiB.
func ShortDID(did string) string {
	if len(did) <= maxLoggedDID {
		return did
	}
	cut := maxLoggedDID
	for cut > 0 && !utf8.RuneStart(did[cut]) {
		cut--
	}
	return did[:cut] + "…"
}
