package raft

import (
	"errors"
	"fmt"
)

var (
	// ErrNotLeader is returned (wrapped in a *NotLeaderError) when a write or
	// a leader-only read reaches a node that is not the leader.
	ErrNotLeader = errors.New("raft: not the leader")
	// ErrClosed is returned by every call made after Close, and by calls that
	// were waiting when the store closed.
	ErrClosed = errors.New("raft: store closed")
	// ErrLeadershipLost is returned when this node lost leadership after
	// accepting a proposal but before it committed: the entry may or may not
	// be applied later, so the caller must treat the outcome as unknown. A
	// clustered store retries instead and returns it only with ctx's error.
	ErrLeadershipLost = errors.New("raft: leadership lost; proposal outcome unknown")
	// ErrNodeIDMismatch is returned by Open when the data directory belongs
	// to a different node.
	ErrNodeIDMismatch = errors.New("raft: data directory belongs to another node")
	// ErrClusterMismatch is returned by Open when the data directory, or
	// the members Join reached, belong to another cluster, and by calls
	// forwarded between nodes of different clusters.
	ErrClusterMismatch = errors.New("raft: cluster id mismatch")
	// ErrDuplicateNodeName is returned by Open when a live member already
	// uses this node's name.
	ErrDuplicateNodeName = errors.New("raft: node name already in use by a live member")
	// ErrJoinFailed is returned by Open when a node without state could not
	// join any member listed in Join within JoinTimeout.
	ErrJoinFailed = errors.New("raft: could not join the cluster")
)

// errForwardFailed marks a forwarded call that did not reach the leader or
// got no answer from it; it is retried.
var errForwardFailed = errors.New("raft: forward to the leader failed")

// NotLeaderError says which node is the leader, when this node knows. It
// matches ErrNotLeader with errors.Is; use errors.As to read the leader.
type NotLeaderError struct {
	LeaderID   string
	LeaderAddr string
}

func (e *NotLeaderError) Error() string {
	if e.LeaderID == "" && e.LeaderAddr == "" {
		return ErrNotLeader.Error() + " (leader unknown)"
	}
	return fmt.Sprintf("%s (leader is %s at %s)", ErrNotLeader, e.LeaderID, e.LeaderAddr)
}

// Is makes errors.Is(err, ErrNotLeader) true.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }
