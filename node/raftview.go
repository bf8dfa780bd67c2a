package node

import (
	"context"
	"fmt"

	"github.com/palaver-chat/palaver/raft"
)

// RaftStatus is this node's view of the control plane (role, term, leader, applied and commit
// indexes, voter count), for health tools and the testcluster harness.
func (n *Node) RaftStatus() raft.Status { return n.raft.Status() }

// RaftMembers lists the cluster's members as this node sees them (gossip state and suffrage).
func (n *Node) RaftMembers() []raft.Member { return n.raft.Members() }

// TransferLeadership hands Raft leadership from this node, which must lead, to another voter
// (see raft.Store.TransferLeadership).
func (n *Node) TransferLeadership(ctx context.Context) error {
	if err := n.raft.TransferLeadership(ctx); err != nil {
		return fmt.Errorf("node %s: %w", n.cfg.NodeName, err)
	}
	return nil
}
