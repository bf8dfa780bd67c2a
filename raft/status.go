package raft

import (
	"strings"
	"sync"
)

// Status is a cheap snapshot of this node's raft state, for health checks
// and metrics.
type Status struct {
	NodeID       string
	Role         string // "leader", "follower", "candidate" or "shutdown"
	Term         uint64
	LeaderID     string // empty when no leader is known
	LeaderAddr   string
	AppliedIndex uint64 // highest index whose effect is in the state machine
	CommitIndex  uint64
	LastLogIndex uint64
	Voters       int // voters in the cluster configuration this node knows
}

// Status reads raft's counters; it does not go through the raft loop except
// to recount voters after a snapshot restore changed the configuration.
func (s *Store) Status() Status {
	leaderAddr, leaderID := s.raft.LeaderWithID()
	return Status{
		NodeID:       s.cfg.NodeID,
		Role:         strings.ToLower(s.raft.State().String()),
		Term:         s.raft.CurrentTerm(),
		LeaderID:     string(leaderID),
		LeaderAddr:   string(leaderAddr),
		AppliedIndex: s.fsm.applied.get(),
		CommitIndex:  s.raft.CommitIndex(),
		LastLogIndex: s.raft.LastIndex(),
		Voters:       s.fsm.voters.get(s.latestVoters),
	}
}

// latestVoters asks the raft loop for the configuration.
func (s *Store) latestVoters() (int, bool) {
	if s.isClosed() {
		return 0, false
	}
	future := s.raft.GetConfiguration()
	if err := future.Error(); err != nil {
		return 0, false
	}
	return countVoters(future.Configuration()), true
}

// voterCount caches the number of voters. Committed configuration entries
// set it exactly (through the FSM); at start and after a snapshot restore,
// which change the configuration without telling the FSM, it is stale and
// the next reader asks raft.
type voterCount struct {
	mu         sync.Mutex
	n          int
	stale      bool
	generation uint64 // bumped by every set and markStale
}

func (v *voterCount) set(n int) {
	v.mu.Lock()
	v.n, v.stale = n, false
	v.generation++
	v.mu.Unlock()
}

func (v *voterCount) markStale() {
	v.mu.Lock()
	v.stale = true
	v.generation++
	v.mu.Unlock()
}

// get returns the cached count, refreshing it with fetch when stale. A
// refresh that raced with a set or markStale is not stored.
func (v *voterCount) get(fetch func() (int, bool)) int {
	v.mu.Lock()
	n, stale, generation := v.n, v.stale, v.generation
	v.mu.Unlock()
	if !stale {
		return n
	}
	fetched, ok := fetch()
	if !ok {
		return n
	}
	v.mu.Lock()
	if v.generation == generation {
		v.n, v.stale = fetched, false
	}
	v.mu.Unlock()
	return fetched
}
