package raft

import (
	"context"
	"fmt"
	"time"

	hraft "github.com/hashicorp/raft"
)

// maxReadIndexWalk bounds the walk back over no-op and barrier entries
// when the leader picks a read index; past it a barrier is cheaper.
const maxReadIndexWalk = 64

// ReadIndex makes the next local reads linearizable: it returns once this
// node's state machine has applied every entry that was committed when the
// call started, and returns that applied index. It works on any node: a
// leader confirms its leadership with a heartbeat round, a follower asks the
// leader over the cluster RPC and waits to catch up. No log entry is
// written (except a barrier by a leader that has not committed in its term
// yet). Like Propose it retries across leader changes until ctx ends; an
// unclustered follower gets a *NotLeaderError.
func (s *Store) ReadIndex(ctx context.Context) (uint64, error) {
	retry := newBackoff(retryLow, retryHigh)
	for {
		changed := s.leader.changed()
		var index uint64
		var err error
		switch {
		case s.isClosed():
			return 0, fmt.Errorf("raft: read index: %w", ErrClosed)
		case s.raft.State() == hraft.Leader:
			index, err = s.leaderReadIndex(ctx)
		case s.rpcClient == nil:
			return 0, s.notLeaderError("read index")
		default:
			var resp *rpcResponse
			if resp, err = s.callLeader(ctx, &rpcRequest{Op: opReadIndex}); err == nil {
				index = resp.Index
			}
		}
		if err == nil {
			if err := s.WaitApplied(ctx, index); err != nil {
				return 0, fmt.Errorf("raft: read index: %w", err)
			}
			return index, nil
		}
		if !s.cfg.clustered() || !retriable(err) {
			return 0, err
		}
		if waitErr := retry.wait(ctx, changed, time.Time{}); waitErr != nil {
			return 0, fmt.Errorf("raft: read index: %w (last attempt: %w)", waitErr, err)
		}
	}
}

// leaderReadIndex returns the index a linearizable read must wait for, on
// the leader. It is the commit index, moved back to the last entry the
// state machine sees (a command or a configuration): no-op and barrier
// entries never reach it, so the applied index can stop short of them.
// The commit index counts only once this leader has committed an entry of
// its own term, and only if the leader is still leader after reading it
// (VerifyLeader: a heartbeat round with a quorum).
func (s *Store) leaderReadIndex(ctx context.Context) (uint64, error) {
	commit := s.raft.CommitIndex()
	term := s.raft.CurrentTerm()
	var entry hraft.Log
	if commit == 0 || s.stores.logs.GetLog(commit, &entry) != nil || entry.Term != term {
		return s.barrierReadIndex(ctx)
	}
	if err := waitFuture(ctx, s.raft.VerifyLeader()); err != nil {
		return 0, s.futureError("read index", err)
	}
	for index, steps := commit, 0; index > 0 && steps < maxReadIndexWalk; index, steps = index-1, steps+1 {
		if index != commit && s.stores.logs.GetLog(index, &entry) != nil {
			break // compacted into a snapshot
		}
		if entry.Type == hraft.LogCommand || entry.Type == hraft.LogConfiguration {
			return index, nil
		}
	}
	return s.barrierReadIndex(ctx)
}

// barrierReadIndex commits a barrier: everything committed before it is
// then applied here, and this node's applied index covers it.
func (s *Store) barrierReadIndex(ctx context.Context) (uint64, error) {
	if err := s.Barrier(ctx); err != nil {
		return 0, err
	}
	return s.fsm.applied.get(), nil
}
