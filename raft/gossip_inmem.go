package raft

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// inmemGossipQueue is how many packets wait for a node's memberlist before
// further ones are dropped, as a full UDP buffer would.
const inmemGossipQueue = 256

// inmemGossip is a memberlist transport inside an InmemNetwork. Packets
// behave like UDP (dropped when the link is cut, the peer is gone or its
// queue is full); streams are in-process pipes that a partition closes.
type inmemGossip struct {
	network *InmemNetwork
	node    string
	addr    inmemAddr
	ip      net.IP
	port    int
	packets chan *memberlist.Packet
	streams chan net.Conn
	done    chan struct{}
	once    sync.Once
}

var _ memberlist.NodeAwareTransport = (*inmemGossip)(nil)

// openGossip registers node's gossip transport at addr, which must be an
// IP and port (memberlist advertises nodes by IP).
func (n *InmemNetwork) openGossip(node, addr string) (*inmemGossip, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("raft: in-memory gossip address %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	port, err := strconv.Atoi(portText)
	if ip == nil || err != nil || port <= 0 || port > 65535 {
		return nil, fmt.Errorf("raft: in-memory gossip address %q: want an IP and a port", addr)
	}
	canonical := net.JoinHostPort(ip.String(), strconv.Itoa(port))
	n.mu.Lock()
	defer n.mu.Unlock()
	if other, ok := n.gossip[canonical]; ok {
		return nil, fmt.Errorf("raft: in-memory gossip address %q is in use by node %q", canonical, other.node)
	}
	t := &inmemGossip{
		network: n,
		node:    node,
		addr:    inmemAddr(canonical),
		ip:      ip,
		port:    port,
		packets: make(chan *memberlist.Packet, inmemGossipQueue),
		streams: make(chan net.Conn),
		done:    make(chan struct{}),
	}
	n.gossip[canonical] = t
	return t, nil
}

// gossipPeer returns the transport at addr when the link from node is up.
func (n *InmemNetwork) gossipPeer(from, addr string) *inmemGossip {
	n.mu.Lock()
	defer n.mu.Unlock()
	peer, ok := n.gossip[addr]
	if !ok || !n.linkUpLocked(from, peer.node) {
		return nil
	}
	return peer
}

func (t *inmemGossip) FinalAdvertiseAddr(string, int) (net.IP, int, error) {
	return t.ip, t.port, nil
}

func (t *inmemGossip) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.WriteToAddress(b, memberlist.Address{Addr: addr})
}

func (t *inmemGossip) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	now := time.Now()
	peer := t.network.gossipPeer(t.node, a.Addr)
	if peer == nil {
		return now, nil // lost, as a datagram to an unreachable host is
	}
	packet := &memberlist.Packet{Buf: bytes.Clone(b), From: t.addr, Timestamp: now}
	select {
	case peer.packets <- packet:
	case <-peer.done:
	default: // queue full: dropped
	}
	return now, nil
}

func (t *inmemGossip) PacketCh() <-chan *memberlist.Packet { return t.packets }

func (t *inmemGossip) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

func (t *inmemGossip) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	n := t.network
	n.mu.Lock()
	peer, ok := n.gossip[a.Addr]
	if !ok || !n.linkUpLocked(t.node, peer.node) {
		n.mu.Unlock()
		return nil, fmt.Errorf("dial %s: %w", a.Addr, errNoRoute)
	}
	local, remote := n.pipeLocked(t.node, peer.node)
	n.mu.Unlock()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case peer.streams <- remote:
		return local, nil
	case <-peer.done:
	case <-t.done:
	case <-timer.C:
	}
	local.Close()
	return nil, fmt.Errorf("dial %s: %w", a.Addr, errNoRoute)
}

func (t *inmemGossip) StreamCh() <-chan net.Conn { return t.streams }

// IngestPacket and IngestStream let memberlist hand over connections it
// read a label from; in-process nothing else feeds them.
func (t *inmemGossip) IngestPacket(conn net.Conn, addr net.Addr, now time.Time, shouldClose bool) error {
	if shouldClose {
		defer conn.Close()
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, conn); err != nil {
		return fmt.Errorf("read packet: %w", err)
	}
	if buf.Len() == 0 {
		return fmt.Errorf("empty packet from %s", addr)
	}
	select {
	case t.packets <- &memberlist.Packet{Buf: buf.Bytes(), From: addr, Timestamp: now}:
	case <-t.done:
	}
	return nil
}

func (t *inmemGossip) IngestStream(conn net.Conn) error {
	select {
	case t.streams <- conn:
		return nil
	case <-t.done:
		conn.Close()
		return net.ErrClosed
	}
}

// Shutdown unregisters the transport; later packets to it are lost and
// dials fail.
func (t *inmemGossip) Shutdown() error {
	t.once.Do(func() {
		close(t.done)
		n := t.network
		n.mu.Lock()
		if n.gossip[string(t.addr)] == t {
			delete(n.gossip, string(t.addr))
		}
		n.mu.Unlock()
	})
	return nil
}
