package irc

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/time/rate"

	"github.com/palaver-chat/palaver/node/clientaddr"
)

// OPER credentials and failure limits. Config.Opers maps a name to a bcrypt hash of its password
// ("$2a$", "$2b$" or "$2y$"); a value that is not a hash is the password itself, for configurations
// built in code. Password guessing is limited twice: a connection gets operFailuresPerConn failed
// OPERs and no more, and a client address (IPv6 per /64) operIPBurst failures at once and one
// more per operIPEvery, across all its connections. An OPER refused by a limit checks nothing.
const (
	operFailuresPerConn = 3
	operIPBurst         = 5
	operIPEvery         = time.Minute
	maxOperAddrs        = 4096
)

// operGuard counts OPER failures per client address.
type operGuard struct {
	// lock tier 9 (leaf)
	mu       sync.Mutex
	byAddr   map[string]*rate.Limiter
	overflow *rate.Limiter
}

func (g *operGuard) limiter(addr string, now time.Time) *rate.Limiter {
	if g.byAddr == nil {
		g.byAddr = map[string]*rate.Limiter{}
		g.overflow = rate.NewLimiter(rate.Every(operIPEvery), operIPBurst)
	}
	l := g.byAddr[addr]
	if l != nil {
		return l
	}
	if len(g.byAddr) >= maxOperAddrs {
		for k, old := range g.byAddr {
			if old.TokensAt(now) >= operIPBurst {
				delete(g.byAddr, k)
			}
		}
		if len(g.byAddr) >= maxOperAddrs {
			return g.overflow
		}
	}
	l = rate.NewLimiter(rate.Every(operIPEvery), operIPBurst)
	g.byAddr[addr] = l
	return l
}

// exhausted reports whether addr has no failed OPER left.
func (g *operGuard) exhausted(addr string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limiter(addr, now).TokensAt(now) < 1
}

// failed counts a failed OPER from addr.
func (g *operGuard) failed(addr string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.limiter(addr, now).AllowN(now, 1)
}

// addrKey is the counted identity of a remote address (clientaddr.ParseKey: its IP, or its /64
// for IPv6), or the address as given when it has no IP.
func addrKey(a net.Addr) string {
	if key, ok := clientaddr.ParseKey(a.String()); ok {
		return key.String()
	}
	return a.String()
}

// operAttempt checks an OPER name and password for c under the failure limits, adding the
// refusal to rb when it fails.
func (c *client) operAttempt(name, password string, rb *respBuf) bool {
	now, addr := time.Now(), addrKey(c.conn.RemoteAddr())
	switch {
	case c.flood.operFailures >= operFailuresPerConn:
		rb.add(c.numericMsg("464", "Password incorrect: too many failed OPER attempts on this connection"))
		return false
	case c.s.operGuard.exhausted(addr, now):
		rb.add(c.numericMsg("464", "Password incorrect: too many failed OPER attempts from your address; try again later"))
		return false
	}
	if c.s.checkOper(name, password) {
		return true
	}
	c.flood.operFailures++
	c.s.operGuard.failed(addr, now)
	c.s.log.Info("failed OPER", "session", c.id, "name", truncate(name, 32), "addr", addr)
	rb.add(c.numericMsg("464", "Password incorrect"))
	return false
}

var (
	decoyOnce sync.Once
	decoyHash []byte
)

// decoy is a hash that no password matches, compared against for an unknown name so that the
// time taken does not tell which names exist.
func decoy() []byte {
	decoyOnce.Do(func() {
		var secret [32]byte
		_, _ = rand.Read(secret[:])
		decoyHash, _ = bcrypt.GenerateFromPassword(secret[:], bcrypt.DefaultCost)
	})
	return decoyHash
}

// IsPasswordHash reports whether an Opers value is a bcrypt hash.
func IsPasswordHash(v string) bool {
	if !strings.HasPrefix(v, "$2a$") && !strings.HasPrefix(v, "$2b$") && !strings.HasPrefix(v, "$2y$") {
		return false
	}
	_, err := bcrypt.Cost([]byte(v))
	return err == nil
}

// checkOper checks an OPER name and password: against the name's bcrypt hash, or in constant
// time against a password configured as is.
func (s *Server) checkOper(name, password string) bool {
	want, ok := s.cfg.Opers[name]
	if !ok || IsPasswordHash(want) {
		hash := []byte(want)
		if !ok {
			hash = decoy()
		}
		return bcrypt.CompareHashAndPassword(hash, []byte(password)) == nil && ok
	}
	a, b := sha256.Sum256([]byte(password)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}
