package raft

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"slices"

	hraft "github.com/hashicorp/raft"

	"github.com/palaver-chat/palaver/raft/trust"
)

// NodeKeys is the cluster's replicated record of the key each node is pinned to (the SHA-256 of
// its certificate's public key, trust.KeySum), kept by the caller's state machine. With one (and
// an Identity), a certificate naming a pinned node is accepted on every plane between nodes only
// for that key, and the leader pins the servers of the configuration and unpins those that left
// it (pinPass).
type NodeKeys interface {
	// NodeKey is the key sum node is pinned to; ok is false when it is not pinned.
	NodeKey(node string) (sum []byte, ok bool)
	// PinnedNodes lists the pinned nodes.
	PinnedNodes() []string
	// PinNodeKey pins node to sum, or unpins it when sum is nil, through the state machine.
	PinNodeKey(ctx context.Context, node string, sum []byte) error
}

// pinPass runs on the leader in each reconcile pass, after the configuration changes: it unpins
// the nodes that are no longer servers (so a removed node's name can join again with a new
// key), pins itself (to its current key, replacing a former one), and pins every other server it can reach to the key of the certificate
// that server presents over the cluster listener. A server not yet pinned is accepted on its
// certificate's chain alone; that window is the time between its addition to the configuration
// and the first pass that reaches it.
//
// It waits until every other server announces in gossip that it keeps pins (nodeMeta.Pins): a
// node of the previous version, during a rolling upgrade, would stop at the pin command. Propose's
// feature-level gate (levels.go) refuses the pin too while a server runs an earlier version
// (ErrClusterUpgrading); the pass then changes nothing.
func (r *reconciler) pinPass(ctx context.Context, servers map[string]hraft.Server, records map[string]memberRecord, clusterID string) {
	s := r.s
	keys := s.cfg.NodeKeys
	if keys == nil || s.cfg.Identity == nil {
		return
	}
	rpcAddrs := map[string]string{}
	for id := range servers {
		rec, ok := records[id]
		if id == s.cfg.NodeID {
			continue
		}
		if !ok || !rec.meta.Pins {
			if !r.pinsWaiting {
				s.logger.Info("node keys are not pinned until every server runs a version that pins them", "member", id)
				r.pinsWaiting = true
			}
			return
		}
		if rec.alive && rec.meta.ClusterID == clusterID {
			rpcAddrs[id] = rec.meta.RPCAddr
		}
	}
	r.pinsWaiting = false
	pin := func(node string, sum []byte) error {
		ctx, cancel := context.WithTimeout(ctx, configChangeTimeout)
		defer cancel()
		return keys.PinNodeKey(ctx, node, sum)
	}
	upgrading := func(err error) bool {
		if !errors.Is(err, ErrClusterUpgrading) {
			return false
		}
		s.logger.Debug("node keys not pinned yet: a server runs an earlier version", "err", err)
		return true
	}
	for _, node := range keys.PinnedNodes() {
		if _, ok := servers[node]; ok {
			continue
		}
		if err := pin(node, nil); err != nil {
			if upgrading(err) {
				return
			}
			s.logger.Warn("unpinning the key of a node that left the configuration", "member", node, "err", err)
			continue
		}
		s.logger.Info("node key unpinned: the node left the configuration", "member", node)
	}
	if own, ok := keys.NodeKey(s.cfg.NodeID); ok && !bytes.Equal(own, s.cfg.Identity.KeySum()) {
		// The leader enrolled again (a restore without its keys): it answers for itself.
		if err := pin(s.cfg.NodeID, nil); err != nil {
			if upgrading(err) {
				return
			}
			s.logger.Warn("unpinning this node's former key", "err", err)
		}
	}
	for _, node := range slices.Sorted(maps.Keys(servers)) {
		if _, ok := keys.NodeKey(node); ok {
			continue
		}
		var sum []byte
		if node == s.cfg.NodeID {
			sum = s.cfg.Identity.KeySum()
		} else {
			addr := rpcAddrs[node]
			if addr == "" {
				continue
			}
			var err error
			if sum, err = s.peerKeySum(ctx, node, addr); err != nil {
				s.logger.Debug("reading a server's key to pin it", "member", node, "err", err)
				continue
			}
		}
		if err := pin(node, sum); err != nil {
			if upgrading(err) {
				return
			}
			s.logger.Warn("pinning a node's key", "member", node, "err", err)
			continue
		}
		s.logger.Info("node key pinned", "member", node, "key", trust.Fingerprint(sum))
	}
}

// peerKeySum connects to node's cluster listener at addr and returns the key sum of the
// certificate it presents, which must name node.
func (s *Store) peerKeySum(ctx context.Context, node, addr string) ([]byte, error) {
	if s.clusterDial == nil {
		return nil, fmt.Errorf("raft: no cluster listener")
	}
	ctx, cancel := context.WithTimeout(ctx, nodeReportTimeout)
	defer cancel()
	conn, err := s.dialClusterTLS(ctx, s.clusterDial, addr, alpnRPC)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	tc, ok := conn.(*tls.Conn)
	if !ok {
		return nil, fmt.Errorf("raft: the connection to %s is not TLS", addr)
	}
	st := tc.ConnectionState()
	named, err := trust.PeerNode(&st)
	if err != nil {
		return nil, err
	}
	if named != node {
		return nil, fmt.Errorf("%w: %s answers as %q, not %q", trust.ErrNotClusterPeer, addr, named, node)
	}
	return trust.KeySum(st.PeerCertificates[0]), nil
}
