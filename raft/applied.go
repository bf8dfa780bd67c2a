package raft

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"
)

// appliedIndex is the highest log index whose effect is in the state machine,
// with a way to wait for it to reach a given value. The FSM goroutine is the
// only writer; waiters park on a channel that is closed when the index passes
// theirs, so a wake-up costs nothing for indexes nobody waits on.
type appliedIndex struct {
	value atomic.Uint64

	// lock tier 9 (leaf)
	mu      sync.Mutex
	waiters waiterHeap
	closed  bool
}

type indexWaiter struct {
	index uint64
	ready chan struct{}
}

// set records a new applied index (it may move backwards only on a snapshot
// restore, which replaces the state) and releases every waiter it satisfies.
func (a *appliedIndex) set(index uint64) {
	a.value.Store(index)
	a.mu.Lock()
	for len(a.waiters) > 0 && a.waiters[0].index <= index {
		w := heap.Pop(&a.waiters).(*indexWaiter)
		close(w.ready)
	}
	a.mu.Unlock()
}

func (a *appliedIndex) get() uint64 { return a.value.Load() }

// wait returns nil once the applied index is at least index, ErrClosed if
// the store closes first, or the context's error.
func (a *appliedIndex) wait(ctx context.Context, index uint64) error {
	if a.value.Load() >= index {
		return nil
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return ErrClosed
	}
	// Checked again under the lock: set stores before it locks, so a value
	// that set has not yet seen us for is visible here.
	if a.value.Load() >= index {
		a.mu.Unlock()
		return nil
	}
	w := &indexWaiter{index: index, ready: make(chan struct{})}
	heap.Push(&a.waiters, w)
	a.mu.Unlock()

	select {
	case <-w.ready:
		if a.value.Load() >= index {
			return nil
		}
		return ErrClosed
	case <-ctx.Done():
		a.remove(w)
		return ctx.Err()
	}
}

func (a *appliedIndex) remove(w *indexWaiter) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, candidate := range a.waiters {
		if candidate == w {
			heap.Remove(&a.waiters, i)
			return
		}
	}
}

// close releases every waiter; later waits that are not already satisfied
// return ErrClosed.
func (a *appliedIndex) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	for _, w := range a.waiters {
		close(w.ready)
	}
	a.waiters = nil
}

// waiterHeap orders waiters by index, lowest first.
type waiterHeap []*indexWaiter

func (h waiterHeap) Len() int           { return len(h) }
func (h waiterHeap) Less(i, j int) bool { return h[i].index < h[j].index }
func (h waiterHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *waiterHeap) Push(x any)        { *h = append(*h, x.(*indexWaiter)) }
func (h *waiterHeap) Pop() any {
	old := *h
	n := len(old)
	w := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return w
}
