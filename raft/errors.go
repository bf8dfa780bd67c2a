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
	// be applied later, so the caller must treat the outcome as unknown.
	ErrLeadershipLost = errors.New("raft: leadership lost; proposal outcome unknown")
	// ErrNodeIDMismatch is returned by Open when the data directory belongs
	// to a different node.
	ErrNodeIDMismatch = errors.New("raft: data directory belongs to another node")
)

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
