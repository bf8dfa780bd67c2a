package raft

import (
	"sync"

	hraft "github.com/hashicorp/raft"
)

// leaderWatch turns raft's leader and state observations into a broadcast:
// changed() returns a channel that is closed at the next change. It is the
// seam for leader-only jobs too (they start and stop on these changes).
type leaderWatch struct {
	raft         *hraft.Raft
	observer     *hraft.Observer
	observations chan hraft.Observation
	// lock tier 9 (leaf)
	mu      sync.Mutex
	current chan struct{} // closed and replaced at each change

	done    chan struct{}
	stopped chan struct{}
}

func watchLeader(r *hraft.Raft) *leaderWatch {
	w := &leaderWatch{
		raft:         r,
		observations: make(chan hraft.Observation, 16),
		current:      make(chan struct{}),
		done:         make(chan struct{}),
		stopped:      make(chan struct{}),
	}
	// Blocking, so that no change is ever dropped: the loop below only
	// closes a channel per observation and keeps reading until stop, which
	// runs after raft has shut down.
	w.observer = hraft.NewObserver(w.observations, true, func(o *hraft.Observation) bool {
		switch o.Data.(type) {
		case hraft.LeaderObservation, hraft.RaftState:
			return true
		}
		return false
	})
	r.RegisterObserver(w.observer)
	go w.loop()
	return w
}

func (w *leaderWatch) loop() {
	defer close(w.stopped)
	for {
		select {
		case <-w.observations:
			w.mu.Lock()
			close(w.current)
			w.current = make(chan struct{})
			w.mu.Unlock()
		case <-w.done:
			return
		}
	}
}

// changed returns a channel closed at the next leader or role change.
func (w *leaderWatch) changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.current
}

// stop deregisters the observer and ends the loop. Call it after raft has
// shut down, so raft no longer sends observations.
func (w *leaderWatch) stop() {
	w.raft.DeregisterObserver(w.observer)
	close(w.done)
	<-w.stopped
}
