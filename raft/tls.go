package raft

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	hraft "github.com/hashicorp/raft"

	"github.com/palaver-chat/palaver/raft/trust"
)

// ALPN protocols of the cluster planes. The raft listener speaks only alpnRaft; the cluster
// listener alpnRPC (the cluster RPC) and alpnHTTP (the cluster's HTTP plane), so a connection
// meant for one plane cannot be answered by another.
const (
	alpnRaft = "palaver-raft"
	alpnRPC  = "palaver-rpc"
	alpnHTTP = "http/1.1"
)

// handshakeTimeout bounds a TLS handshake on a cluster listener: a peer that connects and says
// nothing holds a goroutine this long at most.
const handshakeTimeout = 10 * time.Second

// tlsStreamLayer is raft's stream layer over mutual TLS: it accepts only peers with a
// certificate of the cluster and dials only such peers.
type tlsStreamLayer struct {
	net.Listener
	advertise net.Addr
	server    *tls.Config
	client    *tls.Config
	// allow decides, after the handshake, whether the node the certificate names may speak raft
	// from its address (Store.raftPeerAllowed); nil allows every certificate of the cluster.
	allow func(node string, remote net.Addr) error
}

var _ hraft.StreamLayer = (*tlsStreamLayer)(nil)

func newTLSStreamLayer(bind string, advertise net.Addr, id *trust.Identity, guard *connGuard) (*tlsStreamLayer, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	if guard != nil {
		ln = guard.listener("raft", ln)
	}
	if advertise == nil {
		advertise = ln.Addr()
	}
	if tcp, ok := advertise.(*net.TCPAddr); !ok || tcp.IP == nil || tcp.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("raft: %s is not an address other nodes can dial: set AdvertiseAddr", advertise)
	}
	return &tlsStreamLayer{Listener: ln, advertise: advertise,
		server: id.ServerConfig(alpnRaft), client: id.ClientConfig(alpnRaft, "")}, nil
}

func (l *tlsStreamLayer) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &handshakingConn{Conn: tls.Server(conn, l.server), raw: conn, allow: l.allow}, nil
}

func (l *tlsStreamLayer) Addr() net.Addr { return l.advertise }

func (l *tlsStreamLayer) Dial(address hraft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	dialer := &net.Dialer{Timeout: timeout}
	conn, err := tls.DialWithDialer(dialer, "tcp", string(address), l.client)
	if err != nil {
		return nil, fmt.Errorf("raft: dial %s: %w", address, err)
	}
	return conn, nil
}

// handshakingConn is an accepted TLS connection whose handshake runs, under handshakeTimeout,
// on its first read or write: raft's transport reads it on its own goroutine, so a slow peer
// never holds up the accept loop.
type handshakingConn struct {
	*tls.Conn
	raw   net.Conn // the accepted connection, guarded
	allow func(node string, remote net.Addr) error
	once  sync.Once
	err   error
}

func (c *handshakingConn) handshake() error {
	c.once.Do(func() {
		c.Conn.SetDeadline(time.Now().Add(handshakeTimeout))
		if c.err = c.Conn.Handshake(); c.err != nil {
			return
		}
		if c.allow != nil {
			st := c.Conn.ConnectionState()
			node, err := trust.PeerNode(&st)
			if err == nil {
				err = c.allow(node, c.raw.RemoteAddr())
			}
			if err != nil {
				c.err = err
				c.Conn.Close()
				return
			}
		}
		handshakeDone(c.raw)
		c.err = c.Conn.SetDeadline(time.Time{})
	})
	return c.err
}

func (c *handshakingConn) Read(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *handshakingConn) Write(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// clusterMux serves the cluster listener: it runs the TLS handshake of each connection (a client
// certificate of the cluster required) and hands it, by the protocol agreed in ALPN, to the
// cluster RPC or to the cluster's HTTP plane.
type clusterMux struct {
	raw    net.Listener
	config *tls.Config
	logger *slog.Logger
	rpc    *chanListener
	http   *chanListener
	// operator serves a connection that agreed on alpnOperator (operator.go).
	operator func(context.Context, *tls.Conn)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newClusterMux(raw net.Listener, id *trust.Identity, logger *slog.Logger) *clusterMux {
	ctx, cancel := context.WithCancel(context.Background())
	return &clusterMux{raw: raw, config: withOperatorPlane(id.ServerConfig(alpnRPC, alpnHTTP)), logger: logger,
		rpc: newChanListener(raw.Addr()), http: newChanListener(raw.Addr()), ctx: ctx, cancel: cancel}
}

func (m *clusterMux) start() { m.wg.Go(m.acceptLoop) }

func (m *clusterMux) acceptLoop() {
	retry := newBackoff(5*time.Millisecond, time.Second)
	for {
		conn, err := m.raw.Accept()
		if err != nil {
			if m.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			m.logger.Warn("cluster listener accept failed", "err", err)
			if retry.wait(m.ctx, nil, time.Time{}) != nil {
				return
			}
			continue
		}
		m.wg.Go(func() { m.dispatch(conn) })
	}
}

// dispatch authenticates one connection and hands it to its plane.
func (m *clusterMux) dispatch(raw net.Conn) {
	conn := tls.Server(raw, m.config)
	ctx, cancel := context.WithTimeout(m.ctx, handshakeTimeout)
	err := conn.HandshakeContext(ctx)
	cancel()
	if err != nil {
		m.logger.Debug("cluster connection refused", "remote", raw.RemoteAddr(), "err", err)
		raw.Close()
		return
	}
	handshakeDone(raw)
	target := m.rpc
	switch conn.ConnectionState().NegotiatedProtocol {
	case alpnHTTP:
		target = m.http
	case alpnOperator:
		m.operator(m.ctx, conn)
		return
	}
	if !target.deliver(m.ctx, conn) {
		conn.Close()
	}
}

// close stops accepting and closes both planes' listeners.
func (m *clusterMux) close() error {
	m.cancel()
	err := m.raw.Close()
	m.rpc.Close()
	m.http.Close()
	m.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// chanListener is a net.Listener fed with connections by a clusterMux.
type chanListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) deliver(ctx context.Context, conn net.Conn) bool {
	select {
	case l.conns <- conn:
		return true
	case <-l.done:
	case <-ctx.Done():
	}
	return false
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// dialClusterTLS opens an authenticated connection to the cluster listener at addr for proto,
// over dial (TCP or the in-process network). The server must be a node of the cluster, and the
// node gossip says listens at addr when gossip knows one.
func (s *Store) dialClusterTLS(ctx context.Context, dial func(context.Context, string) (net.Conn, error), addr, proto string) (net.Conn, error) {
	raw, err := dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	conn := tls.Client(raw, s.cfg.Identity.ClientConfig(proto, s.nodeAtClusterAddr(addr)))
	hsCtx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	if err := conn.HandshakeContext(hsCtx); err != nil {
		raw.Close()
		return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	return conn, nil
}

// nodeAtClusterAddr is the id of the member gossip says listens for the cluster RPC at addr, or
// "" when none does.
func (s *Store) nodeAtClusterAddr(addr string) string {
	if s.gossip == nil {
		return ""
	}
	for name, r := range s.gossip.records() {
		if r.meta.RPCAddr == addr {
			return name
		}
	}
	return ""
}

// ClusterHTTPListener is the listener of the cluster's HTTP plane: connections to the cluster
// address that agreed on HTTP/1.1 in ALPN, from peers holding a certificate of the cluster (their
// node id: ClusterPeer). Nil unless the store is clustered with an Identity.
func (s *Store) ClusterHTTPListener() net.Listener {
	if s.mux == nil {
		return nil
	}
	return s.mux.http
}

// ClusterHTTPClient is an HTTP client for other nodes' cluster HTTP planes: requests to
// https://<cluster address>/... go over mutual TLS (through the in-process network with one),
// to the node gossip says listens there. Nil unless the store is clustered with an Identity.
func (s *Store) ClusterHTTPClient() *http.Client {
	if s.mux == nil {
		return nil
	}
	dial := s.clusterDial
	transport := &http.Transport{
		DialTLSContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return s.dialClusterTLS(ctx, dial, addr, alpnHTTP)
		},
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     time.Minute,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: transport}
}

// ErrNotServer is the error of a cluster peer that is not a server of the raft configuration.
var ErrNotServer = errors.New("raft: peer is not a server of this cluster")

// ClusterPeer returns the node id of the peer of a connection to the cluster listener (from its
// certificate) when that node is a server of the current raft configuration.
func (s *Store) ClusterPeer(cs *tls.ConnectionState) (string, error) {
	node, err := trust.PeerNode(cs)
	if err != nil {
		return "", err
	}
	if !s.isServer(node) {
		return "", fmt.Errorf("%w: %q", ErrNotServer, node)
	}
	return node, nil
}

// isServer reports whether node is in the latest raft configuration (voter or not).
func (s *Store) isServer(node string) bool {
	if s.raft == nil {
		return false
	}
	future := s.raft.GetConfiguration()
	if future.Error() != nil {
		return false
	}
	for _, srv := range future.Configuration().Servers {
		if string(srv.ID) == node {
			return true
		}
	}
	return false
}
