package transport

import (
	"net"
	"net/netip"
	"sync"

	"github.com/palaver-chat/palaver/node/clientaddr"
)

// IPLimiter caps the number of concurrent connections from one client: an
// IPv4 address, or an IPv6 /64 (one subscriber's usual allocation, which
// hands out its 2^64 addresses freely). A nil *IPLimiter, or one built with
// n <= 0, admits everything.
type IPLimiter struct {
	max int

	mu     sync.Mutex
	counts map[netip.Prefix]int // guarded by mu; entries at zero are deleted
}

// NewIPLimiter allows at most n concurrent connections per IP; n <= 0
// disables the limit.
func NewIPLimiter(n int) *IPLimiter {
	return &IPLimiter{max: n, counts: make(map[netip.Prefix]int)}
}

// Acquire takes a slot for ip's client (see clientaddr.Key). When ok is true the
// caller must call release once the connection ends (further calls are
// no-ops). A connection without an IP address (a Unix socket, an in-memory
// pipe) is not limited.
func (l *IPLimiter) Acquire(ip net.IP) (release func(), ok bool) {
	a, valid := netip.AddrFromSlice(ip)
	if l == nil || l.max <= 0 || !valid {
		return func() {}, true
	}
	addr := clientaddr.Key(a)

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts[addr] >= l.max {
		return nil, false
	}
	l.counts[addr]++
	var once sync.Once
	return func() { once.Do(func() { l.release(addr) }) }, true
}

func (l *IPLimiter) release(addr netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts[addr] <= 1 {
		delete(l.counts, addr)
		return
	}
	l.counts[addr]--
}

// addrIP extracts the IP of a network address, or nil when it has none.
func addrIP(a net.Addr) net.IP {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP
	case *net.UDPAddr:
		return a.IP
	case *net.IPAddr:
		return a.IP
	}
	if a == nil {
		return nil
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return nil
	}
	return ap.Addr().AsSlice()
}
