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
	Voters       int    // voters in the cluster configuration this node knows
	NonVoters    int    // non-voters in that configuration
	ClusterID    string // empty until the node bootstrapped or joined a cluster
}

// Status reads raft's counters; it does not go through the raft loop except
// to recount voters after a snapshot restore changed the configuration.
func (s *Store) Status() Status {
	leaderAddr, leaderID := s.raft.LeaderWithID()
	suffrage := s.fsm.config.get(s.latestSuffrage)
	return Status{
		NodeID:       s.cfg.NodeID,
		Role:         strings.ToLower(s.raft.State().String()),
		Term:         s.raft.CurrentTerm(),
		LeaderID:     string(leaderID),
		LeaderAddr:   string(leaderAddr),
		AppliedIndex: s.fsm.applied.get(),
		CommitIndex:  s.raft.CommitIndex(),
		LastLogIndex: s.raft.LastIndex(),
		Voters:       suffrage.voters,
		NonVoters:    suffrage.nonVoters,
		ClusterID:    s.ClusterID(),
	}
}

// latestSuffrage asks the raft loop for the configuration.
func (s *Store) latestSuffrage() (suffrageCount, bool) {
	if s.isClosed() {
		return suffrageCount{}, false
	}
	future := s.raft.GetConfiguration()
	if err := future.Error(); err != nil {
		return suffrageCount{}, false
	}
	return countSuffrage(future.Configuration()), true
}

// configCount caches the number of voters and non-voters. Committed
// configuration entries set it exactly (through the FSM); at start and
// after a snapshot restore, which change the configuration without telling
// the FSM, it is stale and the next reader asks raft.
type configCount struct {
	// lock tier 9 (leaf)
	mu         sync.Mutex
	n          suffrageCount
	stale      bool
	generation uint64 // bumped by every set and markStale
}

func (v *configCount) set(n suffrageCount) {
	v.mu.Lock()
	v.n, v.stale = n, false
	v.generation++
	v.mu.Unlock()
}

func (v *configCount) markStale() {
	v.mu.Lock()
	v.stale = true
	v.generation++
	v.mu.Unlock()
}

// get returns the cached count, refreshing it with fetch when stale. A
// refresh that raced with a set or markStale is not stored.
func (v *configCount) get(fetch func() (suffrageCount, bool)) suffrageCount {
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
