package raft

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestFollowersLearnCommitsWithoutWaitingForCommitTimeout sets a one-hour
// CommitTimeout, so an idle leader never tells followers a new commit index
// on its own: every write made on a follower (which returns once that
// follower applied it) and every sighting on the other follower depend on
// the leader's nudge after the commit. Without it the proposals below wait
// for their contexts to end.
func TestFollowersLearnCommitsWithoutWaitingForCommitTimeout(t *testing.T) {
	c := startCluster(t, 3, withCommitTimeout(time.Hour))
	leader := c.waitLeader()
	var followers []*testNode
	for _, n := range c.live() {
		if n.id != leader.id {
			followers = append(followers, n)
		}
	}
	if len(followers) != 2 {
		t.Fatalf("%d followers, want 2", len(followers))
	}
	writer, observer := followers[0], followers[1]
	for i := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, index, err := writer.store.Propose(ctx, fmt.Appendf(nil, "nudge-%d|v%d", i, i))
		if err != nil {
			cancel()
			t.Fatalf("write %d on follower %s: %v", i, writer.id, err)
		}
		if err := observer.store.WaitApplied(ctx, index); err != nil {
			cancel()
			t.Fatalf("write %d (index %d) never applied on follower %s: %v", i, index, observer.id, err)
		}
		cancel()
	}
	// The leader's own writes reach the followers the same way.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, index, err := leader.store.Propose(ctx, []byte("nudge-leader|v"))
	if err != nil {
		t.Fatalf("write on the leader: %v", err)
	}
	for _, f := range followers {
		if err := f.store.WaitApplied(ctx, index); err != nil {
			t.Fatalf("leader's write (index %d) never applied on %s: %v", index, f.id, err)
		}
	}
}
