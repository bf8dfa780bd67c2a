package raft

import (
	"context"
	"fmt"
	"time"

	hraft "github.com/hashicorp/raft"
)

// TransferLeadership hands leadership from this node, which must lead, to
// the most up-to-date other voter, and returns once raft reports the
// transfer done (the target started an election) or failed. While it runs
// the leader refuses new proposals (they are retried). It is an operator
// and fault-injection tool: the testcluster nemesis uses it to move
// leadership without killing a node.
func (s *Store) TransferLeadership(ctx context.Context) error {
	if s.isClosed() {
		return fmt.Errorf("raft: leadership transfer: %w", ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("raft: leadership transfer: %w", err)
	}
	if err := waitFuture(ctx, s.raft.LeadershipTransfer()); err != nil {
		return s.futureError("leadership transfer", err)
	}
	return nil
}

// slowLogStore delays every log write by what delay returns at that moment
// (zero: no delay), as a slow or contended disk would delay the fsync that
// ends each raft-boltdb write. It wraps the log store only when
// Config.LogWriteDelay is set.
type slowLogStore struct {
	hraft.LogStore
	delay func() time.Duration
}

var _ hraft.MonotonicLogStore = (*slowLogStore)(nil)

func (s *slowLogStore) wait() {
	if d := s.delay(); d > 0 {
		time.Sleep(d) // the injected fault itself: the write takes this much longer
	}
}

func (s *slowLogStore) StoreLog(log *hraft.Log) error {
	s.wait()
	return s.LogStore.StoreLog(log)
}

func (s *slowLogStore) StoreLogs(logs []*hraft.Log) error {
	s.wait()
	return s.LogStore.StoreLogs(logs)
}

// IsMonotonic passes the wrapped store's answer on, so that wrapping does
// not change how raft treats the log.
func (s *slowLogStore) IsMonotonic() bool {
	m, ok := s.LogStore.(hraft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}
