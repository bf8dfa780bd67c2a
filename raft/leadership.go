package raft

import (
	"context"
	"sync"
	"time"

	hraft "github.com/hashicorp/raft"
)

// OnLeadership registers a leader-only job. Each time this node becomes
// leader, once it has applied every entry committed before (a barrier),
// job runs on its own goroutine with a context that is cancelled when the
// node loses leadership or closes; a job registered while this node leads
// starts at once. job must return soon after its context ends: the next
// term's jobs start only after the previous term's have returned, so a
// job never runs twice at once on one node.
func (s *Store) OnLeadership(job func(ctx context.Context)) {
	s.leadership.add(job)
}

// leadership starts the leader-only jobs when this node becomes leader and
// cancels them when it stops being leader.
type leadership struct {
	s *Store

	// lock tier 9 (leaf): jobs run on their own goroutines
	mu          sync.Mutex
	jobs        []func(ctx context.Context)
	ctx         context.Context // of the current term; nil when not leading
	cancel      context.CancelFunc
	term        uint64
	established bool // the term's barrier passed and its jobs started
	running     sync.WaitGroup

	done    chan struct{}
	stopped chan struct{}
}

func startLeadership(s *Store) *leadership {
	l := &leadership{s: s, done: make(chan struct{}), stopped: make(chan struct{})}
	go l.loop()
	return l
}

func (l *leadership) add(job func(ctx context.Context)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.jobs = append(l.jobs, job)
	if l.established {
		l.runLocked(job)
	}
}

func (l *leadership) runLocked(job func(ctx context.Context)) {
	ctx := l.ctx
	l.running.Go(func() { job(ctx) })
}

func (l *leadership) loop() {
	defer close(l.stopped)
	for {
		changed := l.s.leader.changed()
		l.update()
		select {
		case <-changed:
		case <-l.done:
			l.stepDown()
			return
		}
	}
}

// update starts or stops the jobs to match raft's state and term.
func (l *leadership) update() {
	leading := l.s.raft.State() == hraft.Leader
	term := l.s.raft.CurrentTerm()
	l.mu.Lock()
	current, currentTerm := l.ctx != nil, l.term
	l.mu.Unlock()
	if current && leading && term == currentTerm {
		return
	}
	if current {
		l.stepDown()
	}
	if !leading {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.mu.Lock()
	l.ctx, l.cancel, l.term, l.established = ctx, cancel, term, false
	l.running.Go(func() { l.establish(ctx) })
	l.mu.Unlock()
	l.s.logger.Info("became raft leader", "term", term)
}

// establish waits until this leader has applied everything committed
// before its term, then starts the jobs.
func (l *leadership) establish(ctx context.Context) {
	retry := newBackoff(10*time.Millisecond, time.Second)
	for {
		err := l.s.Barrier(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		l.s.logger.Debug("leader barrier failed; retrying", "err", err)
		if retry.wait(ctx, nil, time.Time{}) != nil {
			return
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx != ctx {
		return
	}
	l.established = true
	for _, job := range l.jobs {
		l.runLocked(job)
	}
}

// stepDown cancels the current term's jobs and waits for them.
func (l *leadership) stepDown() {
	l.mu.Lock()
	cancel, term := l.cancel, l.term
	l.ctx, l.cancel, l.established = nil, nil, false
	l.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	l.running.Wait()
	l.s.logger.Info("leader jobs stopped", "term", term)
}

func (l *leadership) stop() {
	close(l.done)
	<-l.stopped
}
