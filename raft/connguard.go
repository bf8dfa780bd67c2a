package raft

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/memberlist"
)

// Connections of the cluster ports. Raft's port, the cluster listener and gossip accept TCP from
// anyone before the TLS handshake (or, for gossip, the encrypted stream) tells a member from a
// stranger, so they are bounded before it:
//
//   - together they keep at most a share of the process's file descriptors (RLIMIT_NOFILE, read
//     when the store opens): the rest is the public listeners' reserve, so a flood of connects to
//     the cluster ports never stops IRC or HTTP from accepting;
//   - each port holds at most maxPendingPerPort connections that have not finished their
//     handshake, and at most maxPendingPerAddr of them from one address;
//   - a handshake has handshakeTimeout (gossip streams memberlist's TCPTimeout).
//
// A connection beyond a bound is closed as soon as it is accepted.

// connLimits are the bounds of a store's cluster ports.
type connLimits struct {
	maxOpen           int // connections open on the three ports together
	maxPendingPerPort int // not yet through the handshake, per port
	maxPendingPerAddr int // the same, per port and remote address
}

// clusterFDShare is the part of the descriptor limit the cluster ports may take: a quarter.
const clusterFDShare = 4

// limitsFor derives the bounds from the descriptor limit.
func limitsFor(nofile uint64) connLimits {
	open := int(min(nofile/clusterFDShare, 1<<20))
	open = max(open, 64)
	return connLimits{maxOpen: open, maxPendingPerPort: max(min(256, open/4), 16), maxPendingPerAddr: 16}
}

// descriptorLimit is the soft RLIMIT_NOFILE (Go raises it to the hard limit at start).
func descriptorLimit() (uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, fmt.Errorf("raft: RLIMIT_NOFILE: %w", err)
	}
	return rl.Cur, nil
}

// connGuard counts a store's cluster-port connections against its limits.
type connGuard struct {
	limits connLimits
	logger *slog.Logger

	mu          sync.Mutex // lock tier 9
	open        int
	pendingPort map[string]int
	pendingAddr map[[2]string]int

	refused atomic.Int64
	warned  atomic.Int64 // unix s of the last warning
}

func newConnGuard(limits connLimits, logger *slog.Logger) *connGuard {
	return &connGuard{limits: limits, logger: logger, pendingPort: map[string]int{}, pendingAddr: map[[2]string]int{}}
}

// openConnGuard reads the descriptor limit and builds the guard of a store.
func openConnGuard(logger *slog.Logger) *connGuard {
	n, err := descriptorLimit()
	if err != nil {
		logger.Warn("descriptor limit unknown; cluster ports take at most 1024 connections", "err", err)
		n = 4096
	}
	l := limitsFor(n)
	logger.Debug("cluster port limits", "nofile", n, "max_open", l.maxOpen, "max_pending_per_port", l.maxPendingPerPort,
		"max_pending_per_addr", l.maxPendingPerAddr)
	return newConnGuard(l, logger)
}

// admit counts conn, accepted on port, as open and pending; nil (conn to be closed) past a bound.
func (g *connGuard) admit(port string, conn net.Conn) *guardedConn {
	host := remoteHost(conn.RemoteAddr())
	key := [2]string{port, host}
	g.mu.Lock()
	ok := g.open < g.limits.maxOpen && g.pendingPort[port] < g.limits.maxPendingPerPort &&
		g.pendingAddr[key] < g.limits.maxPendingPerAddr
	if ok {
		g.open++
		g.pendingPort[port]++
		g.pendingAddr[key]++
	}
	g.mu.Unlock()
	if !ok {
		g.refused.Add(1)
		if now := time.Now().Unix(); g.warned.Swap(now) != now {
			g.logger.Warn("cluster port connection refused: too many connections", "port", port, "remote", host)
		}
		return nil
	}
	return &guardedConn{Conn: conn, g: g, key: key}
}

// counts returns the connections open and pending on port (tests and status).
func (g *connGuard) counts(port string) (open, pending int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open, g.pendingPort[port]
}

func remoteHost(a net.Addr) string {
	if a == nil {
		return ""
	}
	s := a.String()
	if h, _, err := net.SplitHostPort(s); err == nil {
		return h
	}
	return s
}

// guardedConn is an admitted connection: pending until handshook, open until closed.
type guardedConn struct {
	net.Conn
	g         *connGuard
	key       [2]string
	handshook sync.Once
	closed    sync.Once
}

// handshakeDone ends the pending state: the peer proved it belongs to the cluster.
func (c *guardedConn) handshakeDone() {
	c.handshook.Do(func() {
		c.g.mu.Lock()
		defer c.g.mu.Unlock()
		if c.g.pendingPort[c.key[0]]--; c.g.pendingPort[c.key[0]] <= 0 {
			delete(c.g.pendingPort, c.key[0])
		}
		if c.g.pendingAddr[c.key]--; c.g.pendingAddr[c.key] <= 0 {
			delete(c.g.pendingAddr, c.key)
		}
	})
}

func (c *guardedConn) Close() error {
	c.handshakeDone()
	c.closed.Do(func() {
		c.g.mu.Lock()
		c.g.open--
		c.g.mu.Unlock()
	})
	return c.Conn.Close()
}

// handshakeDone marks conn, if guarded, as through its handshake.
func handshakeDone(conn net.Conn) {
	if gc, ok := conn.(*guardedConn); ok {
		gc.handshakeDone()
	}
}

// guardedListener admits each accepted connection through its guard.
type guardedListener struct {
	net.Listener
	g    *connGuard
	port string
}

func (g *connGuard) listener(port string, ln net.Listener) net.Listener {
	return &guardedListener{Listener: ln, g: g, port: port}
}

func (l *guardedListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if gc := l.g.admit(l.port, conn); gc != nil {
			return gc, nil
		}
		conn.Close()
	}
}

// guardedGossip is memberlist's TCP/UDP transport whose incoming streams pass the guard; a
// stream stays pending for its whole life (memberlist bounds it with TCPTimeout).
type guardedGossip struct {
	*memberlist.NetTransport
	g       *connGuard
	port    string
	streams chan net.Conn
	done    chan struct{}
	stop    sync.Once
	wg      sync.WaitGroup
}

// newGuardedGossip binds memberlist's transport on host:port (port 0: a free one, retried as
// memberlist does, since TCP and UDP must get the same port).
func newGuardedGossip(host string, port int, g *connGuard, logger *slog.Logger) (*guardedGossip, error) {
	var nt *memberlist.NetTransport
	var err error
	for range 10 {
		nt, err = memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{host}, BindPort: port,
			Logger: newMemberlistLogger(logger)})
		if err == nil || port != 0 || !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("raft: gossip transport: %w", err)
	}
	t := &guardedGossip{NetTransport: nt, g: g, port: "gossip", streams: make(chan net.Conn), done: make(chan struct{})}
	t.wg.Go(t.forward)
	return t, nil
}

func (t *guardedGossip) forward() {
	for {
		select {
		case <-t.done:
			return
		case conn := <-t.NetTransport.StreamCh():
			gc := t.g.admit(t.port, conn)
			if gc == nil {
				conn.Close()
				continue
			}
			select {
			case t.streams <- gc:
			case <-t.done:
				gc.Close()
				return
			}
		}
	}
}

// StreamCh is the guarded stream of incoming connections.
func (t *guardedGossip) StreamCh() <-chan net.Conn { return t.streams }

// Shutdown stops forwarding, then the transport.
func (t *guardedGossip) Shutdown() error {
	t.stop.Do(func() { close(t.done) })
	t.wg.Wait()
	// The transport's accept loop blocks handing over a stream: drain until it stopped.
	drained := make(chan struct{})
	go func() {
		for {
			select {
			case conn := <-t.NetTransport.StreamCh():
				conn.Close()
			case <-drained:
				return
			}
		}
	}()
	err := t.NetTransport.Shutdown()
	close(drained)
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
