package raft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	hraft "github.com/hashicorp/raft"
)

// InmemNetwork wires the stores of one process into a cluster without
// sockets: raft's in-memory transports are connected to each other, gossip
// runs over an in-process memberlist transport, and the cluster RPC over
// in-process pipes. It can cut and restore the links between pairs of nodes
// (Partition, Heal) for fault-injection tests. A network is safe for
// concurrent use; pass the same one in Config.Network of every store.
//
// memberlist.MockNetwork is not used for gossip: it cannot partition, its
// address maps are not safe against a node joining while others gossip, and
// a packet to a stopped node blocks the sender forever.
type InmemNetwork struct {
	// lock tier 1: a cut closes pipes and in-memory transports under it
	mu        sync.Mutex
	raft      map[string]*raftEndpoint  // raft address → endpoint
	gossip    map[string]*inmemGossip   // gossip address → transport
	listeners map[string]*inmemListener // cluster RPC address → listener
	ports     map[string]int            // node id → its default gossip port
	cut       map[nodePair]bool         // pairs whose links are down
	conns     map[*inmemPipe]struct{}   // open stream connections
	nextPort  int
}

type raftEndpoint struct {
	node      string
	transport *hraft.InmemTransport
}

// nodePair is an unordered pair of node ids.
type nodePair struct{ a, b string }

func pairOf(a, b string) nodePair {
	if b < a {
		a, b = b, a
	}
	return nodePair{a, b}
}

// firstInmemGossipPort numbers the in-process gossip addresses; they are
// never bound, only compared.
const firstInmemGossipPort = 17000

// NewInmemNetwork returns an empty network with every link up.
func NewInmemNetwork() *InmemNetwork {
	return &InmemNetwork{
		raft:      map[string]*raftEndpoint{},
		gossip:    map[string]*inmemGossip{},
		listeners: map[string]*inmemListener{},
		ports:     map[string]int{},
		cut:       map[nodePair]bool{},
		conns:     map[*inmemPipe]struct{}{},
		nextPort:  firstInmemGossipPort,
	}
}

// Partition cuts every link between nodes a and b (raft, gossip, cluster
// RPC) in both directions, including open connections. The cut outlives
// restarts of either node until Heal.
func (n *InmemNetwork) Partition(a, b string) {
	if a == b {
		return
	}
	n.mu.Lock()
	n.cut[pairOf(a, b)] = true
	var doomed []*inmemPipe
	for p := range n.conns {
		if pairOf(p.from, p.to) == pairOf(a, b) {
			doomed = append(doomed, p)
		}
	}
	for _, ep := range n.raft {
		for _, peer := range n.raft {
			if ep.node == a && peer.node == b || ep.node == b && peer.node == a {
				ep.transport.Disconnect(peer.transport.LocalAddr())
			}
		}
	}
	n.mu.Unlock()
	for _, p := range doomed {
		p.close()
	}
}

// Isolate partitions node from every other node the network knows now.
func (n *InmemNetwork) Isolate(node string) {
	for _, other := range n.nodes() {
		n.Partition(node, other)
	}
}

// Heal restores the links between a and b.
func (n *InmemNetwork) Heal(a, b string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.cut, pairOf(a, b))
	n.connectRaftLocked()
}

// HealAll restores every link.
func (n *InmemNetwork) HealAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.cut)
	n.connectRaftLocked()
}

// Partitioned reports whether the links between a and b are cut.
func (n *InmemNetwork) Partitioned(a, b string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cut[pairOf(a, b)]
}

// nodes lists the ids of every node with a registered endpoint or a
// reserved gossip port.
func (n *InmemNetwork) nodes() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	seen := map[string]bool{}
	for node := range n.ports {
		seen[node] = true
	}
	for _, ep := range n.raft {
		seen[ep.node] = true
	}
	out := make([]string, 0, len(seen))
	for node := range seen {
		out = append(out, node)
	}
	return out
}

func (n *InmemNetwork) linkUpLocked(a, b string) bool { return a == b || !n.cut[pairOf(a, b)] }

// connectRaftLocked connects every pair of raft transports whose link is up.
// Connect is idempotent, so it is simply redone for all pairs.
func (n *InmemNetwork) connectRaftLocked() {
	for addr, ep := range n.raft {
		for peerAddr, peer := range n.raft {
			if addr != peerAddr && n.linkUpLocked(ep.node, peer.node) {
				ep.transport.Connect(hraft.ServerAddress(peerAddr), peer.transport)
			}
		}
	}
}

// openRaftTransport creates and registers node's in-memory raft transport.
func (n *InmemNetwork) openRaftTransport(node, addr string) (*hraft.InmemTransport, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ep, ok := n.raft[addr]; ok {
		return nil, fmt.Errorf("raft: in-memory raft address %q is in use by node %q", addr, ep.node)
	}
	_, transport := hraft.NewInmemTransport(hraft.ServerAddress(addr))
	n.raft[addr] = &raftEndpoint{node: node, transport: transport}
	n.connectRaftLocked()
	return transport, nil
}

// closeRaftTransport unregisters addr and disconnects it from every peer.
func (n *InmemNetwork) closeRaftTransport(addr string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ep, ok := n.raft[addr]
	if !ok {
		return
	}
	delete(n.raft, addr)
	for _, peer := range n.raft {
		peer.transport.Disconnect(hraft.ServerAddress(addr))
	}
	ep.transport.DisconnectAll()
}

// gossipAddrFor returns node's default gossip address, the same on every
// restart so that a returning node is recognised by address.
func (n *InmemNetwork) gossipAddrFor(node string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	port, ok := n.ports[node]
	if !ok {
		port = n.nextPort
		n.nextPort++
		n.ports[node] = port
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// openListener registers an in-process cluster RPC listener at addr.
func (n *InmemNetwork) openListener(node, addr string) (*inmemListener, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l, ok := n.listeners[addr]; ok {
		return nil, fmt.Errorf("raft: in-memory cluster address %q is in use by node %q", addr, l.node)
	}
	l := &inmemListener{
		network: n,
		node:    node,
		addr:    inmemAddr(addr),
		conns:   make(chan net.Conn),
		done:    make(chan struct{}),
	}
	n.listeners[addr] = l
	return l, nil
}

func (n *InmemNetwork) closeListener(l *inmemListener) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.listeners[string(l.addr)] == l {
		delete(n.listeners, string(l.addr))
	}
}

// dialCluster opens a connection from node to the listener at addr.
func (n *InmemNetwork) dialCluster(ctx context.Context, from, addr string) (net.Conn, error) {
	n.mu.Lock()
	l, ok := n.listeners[addr]
	if !ok || !n.linkUpLocked(from, l.node) {
		n.mu.Unlock()
		return nil, fmt.Errorf("dial %s: %w", addr, errNoRoute)
	}
	local, remote := n.pipeLocked(from, l.node)
	n.mu.Unlock()
	select {
	case l.conns <- remote:
		return local, nil
	case <-l.done:
	case <-ctx.Done():
	}
	local.Close()
	remote.Close()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return nil, fmt.Errorf("dial %s: %w", addr, errNoRoute)
}

// pipeLocked returns the two ends of a tracked in-process connection.
func (n *InmemNetwork) pipeLocked(from, to string) (local, remote net.Conn) {
	a, b := net.Pipe()
	p := &inmemPipe{network: n, ends: [2]net.Conn{a, b}, from: from, to: to}
	n.conns[p] = struct{}{}
	p.conns = [2]*inmemConn{newInmemConn(a, p), newInmemConn(b, p)}
	return p.conns[0], p.conns[1]
}

var errNoRoute = errors.New("no route to host")

// inmemPipe is an in-process connection between two nodes. Closing one end
// closes that end (the peer reads EOF); a partition between its nodes closes
// both. The network forgets the pipe once both ends are closed.
type inmemPipe struct {
	network  *InmemNetwork
	ends     [2]net.Conn
	conns    [2]*inmemConn
	from, to string
	once     sync.Once

	// lock tier 8: under InmemNetwork.mu; takes the ends' locks
	mu     sync.Mutex
	closed int // ends closed through closeEnd
}

// close cuts the pipe: both ends, and later writes to either fail.
func (p *inmemPipe) close() {
	p.once.Do(func() {
		p.forget()
		p.ends[0].Close()
		p.ends[1].Close()
		for _, c := range p.conns {
			c.fail(net.ErrClosed)
		}
	})
}

// closeEnd closes one end, and forgets the pipe once both are closed.
func (p *inmemPipe) closeEnd(end net.Conn) {
	end.Close()
	p.mu.Lock()
	p.closed++
	both := p.closed == 2
	p.mu.Unlock()
	if both {
		p.forget()
	}
}

func (p *inmemPipe) forget() {
	p.network.mu.Lock()
	delete(p.network.conns, p)
	p.network.mu.Unlock()
}

// inmemCloseLinger bounds how long a closed inmemConn keeps trying to hand its last writes to a
// peer that does not read.
const inmemCloseLinger = time.Second

// inmemConn is one end of an inmemPipe. As on TCP, a write does not wait for the peer to read
// it: writes are queued and handed to the synchronous pipe by a goroutine. This matters for TLS,
// which writes a close alert in Close: over a bare net.Pipe that write would wait (up to TLS's 5 s)
// for a peer that may never read again, such as an idle pooled connection. Close makes this
// end's reads fail at once, lets the queued writes go for at most inmemCloseLinger, then closes
// this end (the peer reads EOF).
type inmemConn struct {
	net.Conn // the pipe end
	pipe     *inmemPipe

	// lock tier 9 (leaf)
	mu      sync.Mutex
	wake    *sync.Cond
	queue   [][]byte
	closing bool
	err     error // the first failed write; later writes fail with it
}

func newInmemConn(end net.Conn, p *inmemPipe) *inmemConn {
	c := &inmemConn{Conn: end, pipe: p}
	c.wake = sync.NewCond(&c.mu)
	go c.writeLoop()
	return c
}

func (c *inmemConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closing:
		return 0, net.ErrClosed
	case c.err != nil:
		return 0, c.err
	}
	c.queue = append(c.queue, bytes.Clone(b))
	c.wake.Signal()
	return len(b), nil
}

func (c *inmemConn) writeLoop() {
	defer c.pipe.closeEnd(c.Conn)
	for {
		c.mu.Lock()
		for len(c.queue) == 0 && !c.closing && c.err == nil {
			c.wake.Wait()
		}
		if len(c.queue) == 0 {
			c.mu.Unlock()
			return // closed (everything handed over) or cut
		}
		b := c.queue[0]
		c.queue = c.queue[1:]
		c.mu.Unlock()
		if _, err := c.Conn.Write(b); err != nil {
			c.mu.Lock()
			c.err, c.queue = err, nil
			c.mu.Unlock()
			return
		}
	}
}

// fail makes later writes fail with err and drops the queued ones.
func (c *inmemConn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
	c.queue = nil
	c.wake.Signal()
}

func (c *inmemConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closing {
		c.closing = true
		c.Conn.SetReadDeadline(time.Unix(1, 0))
		c.Conn.SetWriteDeadline(time.Now().Add(inmemCloseLinger))
		c.wake.Signal()
	}
	return nil
}

// inmemAddr is an in-process address.
type inmemAddr string

func (a inmemAddr) Network() string { return "inmem" }
func (a inmemAddr) String() string  { return string(a) }

// inmemListener is a net.Listener fed by dialCluster.
type inmemListener struct {
	network *InmemNetwork
	node    string
	addr    inmemAddr
	conns   chan net.Conn
	done    chan struct{}
	once    sync.Once
}

func (l *inmemListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *inmemListener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.network.closeListener(l)
	})
	return nil
}

func (l *inmemListener) Addr() net.Addr { return l.addr }
