package raft

import (
	"context"
	"errors"
	"fmt"
	"time"

	hraft "github.com/hashicorp/raft"
)

// defaultEnqueueTimeout bounds how long a call waits for raft to accept an
// entry when its context has no deadline.
const defaultEnqueueTimeout = 10 * time.Second

// Propose appends data to the log and returns the state machine's Apply
// response and the entry's index once THIS node has applied it, so the
// caller reads its own write from the local replica.
//
// On a clustered node that is not the leader the entry is forwarded to the
// leader over the cluster RPC; the leader answers with the index, and the
// response returned is this node's own state machine's for that index.
// When the leader is unknown, changes, or loses leadership before the
// entry commits, Propose retries (with backoff, until ctx ends): a retried
// entry may be committed twice, so entries must carry a request id the
// state machine deduplicates (raft/fsm does). An unclustered follower
// returns a *NotLeaderError (errors.Is ErrNotLeader) at once. If ctx ends
// after an entry was handed on, it may still be applied.
func (s *Store) Propose(ctx context.Context, data []byte) (resp any, index uint64, err error) {
	start := time.Now()
	resp, index, err = s.propose(ctx, data)
	if err != nil {
		return nil, 0, err
	}
	if s.cfg.OnApply != nil {
		s.cfg.OnApply(time.Since(start))
	}
	return resp, index, nil
}

// proposeLocal hands data to raft on this node, which must lead.
func (s *Store) proposeLocal(ctx context.Context, data []byte) (any, uint64, error) {
	timeout, err := s.callTimeout(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("raft: propose: %w", err)
	}
	s.nudgeBegin()
	future := s.raft.Apply(data, timeout)
	err = waitFuture(ctx, future)
	s.nudgeEnd(err == nil)
	if err != nil {
		return nil, 0, s.futureError("propose", err)
	}
	return future.Response(), future.Index(), nil
}

// Barrier returns once every entry committed before it has been applied
// here. On the leader that makes local reads linearizable: a barrier entry
// can only commit with a quorum that recognizes this leader. Use it after
// gaining leadership (and after Open on a restarted single node) before
// serving reads that must include every acknowledged write.
func (s *Store) Barrier(ctx context.Context) error {
	timeout, err := s.callTimeout(ctx)
	if err != nil {
		return fmt.Errorf("raft: barrier: %w", err)
	}
	if err := waitFuture(ctx, s.raft.Barrier(timeout)); err != nil {
		return s.futureError("barrier", err)
	}
	return nil
}

// WaitForLeader returns once this node knows a leader (itself or another).
func (s *Store) WaitForLeader(ctx context.Context) error {
	for {
		changed := s.leader.changed()
		if _, id := s.raft.LeaderWithID(); id != "" {
			return nil
		}
		select {
		case <-changed:
		case <-s.closing:
			return fmt.Errorf("raft: wait for leader: %w", ErrClosed)
		case <-ctx.Done():
			return fmt.Errorf("raft: wait for leader: %w", ctx.Err())
		}
	}
}

// WaitApplied returns once AppliedIndex is at least index. Indexes count
// commands and configuration changes; the leader's no-op and barrier
// entries carry no effect and do not move AppliedIndex, so wait on indexes
// returned by Propose or on another node's AppliedIndex, not on a raw
// commit index.
func (s *Store) WaitApplied(ctx context.Context, index uint64) error {
	if err := s.fsm.applied.wait(ctx, index); err != nil {
		return fmt.Errorf("raft: wait for applied index %d (at %d): %w", index, s.fsm.applied.get(), err)
	}
	return nil
}

// AppliedIndex is the highest index whose effect is in the state machine.
func (s *Store) AppliedIndex() uint64 { return s.fsm.applied.get() }

// Snapshot asks raft for a snapshot now and waits until it is stored. A
// store with nothing new since the last snapshot returns nil.
func (s *Store) Snapshot() error {
	if s.isClosed() {
		return fmt.Errorf("raft: snapshot: %w", ErrClosed)
	}
	err := s.raft.Snapshot().Error()
	if errors.Is(err, hraft.ErrNothingNewToSnapshot) {
		return nil
	}
	if err != nil {
		return s.futureError("snapshot", err)
	}
	return nil
}

// callTimeout turns ctx's deadline into raft's enqueue timeout.
func (s *Store) callTimeout(ctx context.Context) (time.Duration, error) {
	if s.isClosed() {
		return 0, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		return defaultEnqueueTimeout, nil
	}
	timeout := time.Until(deadline)
	if timeout <= 0 {
		return 0, context.DeadlineExceeded
	}
	return timeout, nil
}

// waitFuture waits for a raft future or for ctx, whichever ends first. The
// future's own timeout only covers handing the entry to raft, so the
// context is what bounds the wait for commit.
func waitFuture(ctx context.Context, future hraft.Future) error {
	if ctx.Done() == nil {
		return future.Error()
	}
	done := make(chan error, 1)
	go func() { done <- future.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w (raft may still apply the entry)", ctx.Err())
	}
}

// futureError translates raft's errors into this package's.
func (s *Store) futureError(op string, err error) error {
	switch {
	case errors.Is(err, hraft.ErrNotLeader):
		leaderAddr, leaderID := s.raft.LeaderWithID()
		return fmt.Errorf("raft: %s: %w", op, &NotLeaderError{LeaderID: string(leaderID), LeaderAddr: string(leaderAddr)})
	case errors.Is(err, hraft.ErrLeadershipTransferInProgress):
		// Rejected before it entered the log; the next leader is not known yet.
		return fmt.Errorf("raft: %s: %w: %w", op, &NotLeaderError{}, err)
	case errors.Is(err, hraft.ErrLeadershipLost), errors.Is(err, hraft.ErrAbortedByRestore):
		return fmt.Errorf("raft: %s: %w: %w", op, ErrLeadershipLost, err)
	case errors.Is(err, hraft.ErrRaftShutdown):
		return fmt.Errorf("raft: %s: %w", op, ErrClosed)
	case errors.Is(err, hraft.ErrEnqueueTimeout):
		return fmt.Errorf("raft: %s: %w: %w", op, context.DeadlineExceeded, err)
	default:
		return fmt.Errorf("raft: %s: %w", op, err)
	}
}
