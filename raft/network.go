package raft

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

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
	return &inmemConn{Conn: a, pipe: p}, &inmemConn{Conn: b, pipe: p}
}

var errNoRoute = errors.New("no route to host")

// inmemPipe is an in-process connection between two nodes. Closing either
// end, or a partition between its nodes, closes both ends.
type inmemPipe struct {
	network  *InmemNetwork
	ends     [2]net.Conn
	from, to string
	once     sync.Once
}

func (p *inmemPipe) close() {
	p.once.Do(func() {
		p.network.mu.Lock()
		delete(p.network.conns, p)
		p.network.mu.Unlock()
		p.ends[0].Close()
		p.ends[1].Close()
	})
}

// inmemConn is one end of an inmemPipe.
type inmemConn struct {
	net.Conn
	pipe *inmemPipe
}

func (c *inmemConn) Close() error {
	c.pipe.close()
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
