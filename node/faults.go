package node

import (
	"context"
	"fmt"
	"time"

	"github.com/palaver-chat/palaver/raft"
)

// Faults injects network and disk faults into a node, for the testcluster harness. Config.Faults
// is nil in production: the node then uses the real network and disk, and nothing here runs.
type Faults struct {
	// Network replaces the node's Raft transport, gossip and cluster listener with in-process
	// links that can be cut and healed between pairs of nodes (raft.InmemNetwork.Partition). The
	// event exchange runs on the cluster listener's HTTP plane, over the same links, so a
	// partition cuts it too. Every node of the cluster must use the same one. Storage stays on
	// disk in DataDir; the cluster planes still run over mutual TLS.
	Network *raft.InmemNetwork
	// LogWriteDelay, when set, delays every Raft log write by its answer: a slow disk.
	LogWriteDelay func() time.Duration
	// PanicAt, when set, is asked at the points panics.go names and makes the code there panic
	// when it answers true: a bug, for the tests that show a panic ends only what it should.
	PanicAt func(point string) bool
}

func (f *Faults) network() *raft.InmemNetwork {
	if f == nil {
		return nil
	}
	return f.Network
}

func (f *Faults) logWriteDelay() func() time.Duration {
	if f == nil {
		return nil
	}
	return f.LogWriteDelay
}

// TransferLeadership hands Raft leadership from this node, which must lead, to another voter
// (see raft.Store.TransferLeadership).
func (n *Node) TransferLeadership(ctx context.Context) error {
	if err := n.raft.TransferLeadership(ctx); err != nil {
		return fmt.Errorf("node %s: %w", n.cfg.NodeName, err)
	}
	return nil
}
