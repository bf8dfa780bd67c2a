package raft

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestTransferLeadership moves leadership off the leader without stopping it: another node
// leads afterwards, proposals still commit, and a follower's transfer is refused.
func TestTransferLeadership(t *testing.T) {
	c := startCluster(t, 3)
	old := c.waitLeader()
	var follower *testNode
	for _, n := range c.live() {
		if n != old {
			follower = n
			break
		}
	}
	if err := follower.store.TransferLeadership(testContext(t)); !errors.Is(err, ErrNotLeader) {
		t.Errorf("transfer from a follower: err = %v, want ErrNotLeader", err)
	}
	if err := old.store.TransferLeadership(testContext(t)); err != nil {
		t.Fatalf("TransferLeadership: %v", err)
	}
	waitFor(t, "a new leader", func() bool {
		l := c.leader()
		return l != nil && l != old
	})
	c.propose(old.id, "after-transfer", "x")
	if got := c.waitConverged(); countOf(got, "x") != 1 {
		t.Errorf("items after the transfer = %v, want one x", got)
	}
}

// TestLogWriteDelay: a store with LogWriteDelay asks it before each log write and still commits.
func TestLogWriteDelay(t *testing.T) {
	tests := []struct {
		name  string
		delay time.Duration
	}{
		{"no delay", 0},
		{"slow disk", 20 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked atomic.Int64
			cfg := fastConfig("slow", t.TempDir())
			cfg.LogWriteDelay = func() time.Duration { asked.Add(1); return tt.delay }
			s := openLeader(t, cfg, newDedupMachine())
			before := asked.Load()
			start := time.Now()
			mustPropose(t, s, "r1|a")
			if asked.Load() <= before {
				t.Error("LogWriteDelay was not asked for the proposal's log write")
			}
			if took := time.Since(start); took < tt.delay {
				t.Errorf("proposal took %s, less than the injected delay %s", took, tt.delay)
			}
		})
	}
}
