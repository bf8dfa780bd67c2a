package raft

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// Who may speak raft to this node. Holding a certificate of the cluster is not enough: after the
// TLS handshake the raft listener accepts the connection only from a server of this node's latest
// configuration, and only from the host of the raft address the configuration gives it. Two cases
// where the configuration cannot know the caller yet are let through: a node without any
// configuration (it is joining: the leader's first AppendEntries brings the configuration), and a
// live gossip member announcing the caller's raft address (a leader this node's configuration
// does not name yet, since it lags behind the change that added it). A server's address given
// as a name instead of an IP is not checked against the caller's address.

// errRaftPeer refuses a raft connection.
var errRaftPeer = errors.New("raft: not a server of this cluster at that address")

// raftPeerAllowed decides whether node, connected from remote, may speak raft to this node.
func (s *Store) raftPeerAllowed(node string, remote net.Addr) error {
	r := s.running.Load()
	if r == nil {
		return fmt.Errorf("%w: raft is not running yet", errRaftPeer)
	}
	future := r.GetConfiguration()
	if err := future.Error(); err != nil {
		return fmt.Errorf("raft: configuration: %w", err)
	}
	servers := future.Configuration().Servers
	if len(servers) == 0 {
		return nil
	}
	for _, srv := range servers {
		if string(srv.ID) == node {
			return sameHost(string(srv.Address), remote, node)
		}
	}
	for _, m := range s.Members() {
		if m.NodeID == node && m.State == MemberAlive && m.RaftAddr != "" && !m.Self {
			return sameHost(m.RaftAddr, remote, node)
		}
	}
	return fmt.Errorf("%w: %q", errRaftPeer, node)
}

// sameHost checks that remote is on the host of addr, when addr's host is an IP.
func sameHost(addr string, remote net.Addr, node string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: %q has address %q", errRaftPeer, node, addr)
	}
	want, err := netip.ParseAddr(host)
	if err != nil {
		return nil // a name: not checked
	}
	tcp, ok := remote.(*net.TCPAddr)
	if !ok {
		return nil // not TCP (in-process transports)
	}
	got, ok := netip.AddrFromSlice(tcp.IP)
	if !ok || got.Unmap() != want.Unmap() {
		return fmt.Errorf("%w: %q connected from %s, its address is %s", errRaftPeer, node, tcp.IP, addr)
	}
	return nil
}
