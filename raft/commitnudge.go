package raft

import (
	"sync/atomic"
	"time"

	hraft "github.com/hashicorp/raft"
)

// commitNudge tells followers about a commit at once instead of one
// CommitTimeout later.
//
// hashicorp/raft sends the leader's commit index to followers only with
// its next AppendEntries: the next entry, or, on an idle leader, after
// randomTimeout(CommitTimeout). A change made on a follower is applied (and
// echoed) there only once that node learns the commit, and so is its
// sighting by a member on another follower: with nothing else to send, both
// waited 1–2 CommitTimeouts (B8). When the leader's last write in flight
// has committed, the nudge appends a barrier entry, whose replication —
// immediate, since it is a new entry — carries the new commit index. Under
// a steady load the next write does that anyway and no barrier is added; at
// most one barrier is in flight, and a write that commits meanwhile leaves
// a kick for one more. Barrier entries have no effect on the state machine.
type commitNudge struct {
	inflight atomic.Int64  // writes handed to raft on this leader and not yet answered
	kick     chan struct{} // 1-buffered: a nudge is due
}

func newCommitNudge() *commitNudge { return &commitNudge{kick: make(chan struct{}, 1)} }

// begin counts a write handed to raft.
func (n *commitNudge) begin() { n.inflight.Add(1) }

// end counts a write answered; when it was the last in flight and it
// committed, a nudge is due.
func (n *commitNudge) end(committed bool) {
	if n.inflight.Add(-1) > 0 || !committed {
		return
	}
	select {
	case n.kick <- struct{}{}:
	default: // one is due already
	}
}

// run appends a barrier for every kick while s leads, until s closes.
func (n *commitNudge) run(s *Store) {
	for {
		select {
		case <-s.closing:
			return
		case <-n.kick:
		}
		if s.raft.State() != hraft.Leader {
			continue
		}
		// The timeout only bounds the enqueueing; the future resolves once
		// the barrier is applied here, or on leadership loss or shutdown.
		_ = s.raft.Barrier(time.Second).Error()
	}
}

func (s *Store) nudgeBegin() {
	if s.nudge != nil {
		s.nudge.begin()
	}
}

func (s *Store) nudgeEnd(committed bool) {
	if s.nudge != nil {
		s.nudge.end(committed)
	}
}
