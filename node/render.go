package node

import (
	"context"
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// defaultRenderQueueEvents bounds the events applied but not yet rendered. Past it, Raft's apply
// loop waits for the renderer (back-pressure): events are never dropped or reordered.
const defaultRenderQueueEvents = 64 << 10

// renderBatch is one applied entry's events, or a snapshot restore (resync) at index.
type renderBatch struct {
	index  uint64
	events []fsm.Event
	resync bool
}

// renderQueue takes the rendering of applied events off Raft's apply path. The state machine
// hands each applied entry's events to push, in log order; one goroutine renders them in that
// order (the IRC edge, then federation). Rendering a JOIN to a channel is O(members); on the apply
// path it stalled the commit of everything behind it (B5: 5,000 clients joining one channel).
//
// A proposer waits with waitRendered for its own entry's events to be rendered before it returns,
// so a command's own effects still reach its client before the command's replies. Renderers must
// therefore never propose and wait on their own goroutine: that wait would block on itself (and,
// with the queue full, on Apply) until the proposal's context ends.
type renderQueue struct {
	render func(index uint64, events []fsm.Event)
	resync func(index uint64)
	limit  int
	log    *slog.Logger // where a renderer's panic is reported (renderBatch)

	// lock tier 9 (leaf): released before rendering and while waiting for room
	mu        sync.Mutex
	pending   []renderBatch // FIFO; pending[head:] are waiting
	head      int
	queued    int           // events pushed and not rendered yet, the batch being rendered included
	busy      uint64        // index of the batch being rendered, 0 when idle
	changed   chan struct{} // closed at the next progress; see watch
	watched   bool          // someone holds changed: broadcast must replace it
	closed    bool
	wake      chan struct{} // 1-buffered: work was pushed
	done      chan struct{}
	startOnce sync.Once
}

// newRenderQueue returns a queue that renders with render (and rebuilds views after a snapshot
// restore with resync), holding at most limit events (≤ 0: the default). Call start, then close.
func newRenderQueue(limit int, render func(index uint64, events []fsm.Event), resync func(index uint64)) *renderQueue {
	if limit <= 0 {
		limit = defaultRenderQueueEvents
	}
	return &renderQueue{
		render: render, resync: resync, limit: limit, log: slog.Default(),
		changed: make(chan struct{}), wake: make(chan struct{}, 1), done: make(chan struct{}),
	}
}

// start runs the rendering goroutine.
func (q *renderQueue) start() {
	q.startOnce.Do(func() { go q.loop() })
}

// push queues an applied entry's events; it is the machine's Observer. It blocks while the queue
// holds limit events or more (one batch larger than the limit is still taken when the queue is
// empty). After close it returns at once: there is no one left to render for.
func (q *renderQueue) push(index uint64, events []fsm.Event) {
	q.enqueue(renderBatch{index: index, events: events})
}

// pushResync queues a snapshot restore at index; it is the machine's RestoreObserver.
func (q *renderQueue) pushResync(index uint64) {
	q.enqueue(renderBatch{index: index, resync: true})
}

func (q *renderQueue) enqueue(b renderBatch) {
	q.mu.Lock()
	for !q.closed && q.queued > 0 && q.queued+len(b.events) > q.limit {
		ch := q.watch()
		q.mu.Unlock()
		<-ch
		q.mu.Lock()
	}
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.pending = append(q.pending, b)
	q.queued += len(b.events)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// waitRendered returns once every batch at or below index has been rendered, or when ctx ends
// (with its error) or the queue closes (nil).
func (q *renderQueue) waitRendered(ctx context.Context, index uint64) error {
	for {
		q.mu.Lock()
		if q.closed || q.renderedThrough(index) {
			q.mu.Unlock()
			return nil
		}
		ch := q.watch()
		q.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// renderedThrough reports whether no batch at or below index is waiting or being rendered.
// Batches are queued in log order, so only the oldest needs looking at. q.mu is held.
func (q *renderQueue) renderedThrough(index uint64) bool {
	if q.busy != 0 && q.busy <= index {
		return false
	}
	return q.head == len(q.pending) || q.pending[q.head].index > index
}

// watch returns the channel closed at the next progress. q.mu is held.
func (q *renderQueue) watch() <-chan struct{} {
	q.watched = true
	return q.changed
}

// broadcast wakes everyone waiting for progress. Every applied entry passes here, so with no one
// waiting (a follower's entries, commands proposed elsewhere) it costs nothing. q.mu is held.
func (q *renderQueue) broadcast() {
	if !q.watched {
		return
	}
	close(q.changed)
	q.changed, q.watched = make(chan struct{}), false
}

func (q *renderQueue) loop() {
	defer close(q.done)
	for {
		q.mu.Lock()
		for q.head == len(q.pending) && !q.closed {
			q.mu.Unlock()
			<-q.wake
			q.mu.Lock()
		}
		if q.closed {
			q.mu.Unlock()
			return
		}
		b := q.pending[q.head]
		q.pending[q.head] = renderBatch{}
		q.head++
		if q.head == len(q.pending) { // drained: reuse the backing array
			q.pending, q.head = q.pending[:0], 0
		} else if q.head >= 1024 && q.head*2 >= len(q.pending) { // never drained: drop the done prefix
			n := copy(q.pending, q.pending[q.head:])
			clear(q.pending[n:])
			q.pending, q.head = q.pending[:n], 0
		}
		q.busy = max(b.index, 1)
		q.mu.Unlock()

		q.renderBatch(b)

		q.mu.Lock()
		q.busy = 0
		q.queued -= len(b.events)
		q.broadcast()
		q.mu.Unlock()
	}
}

// renderBatch renders one batch. A panic in a renderer is logged with its stack and the views are
// rebuilt from the state (resync), as after a snapshot restore: the batch's lines may be lost for
// local clients, but the loop, and the node, keep running.
func (q *renderQueue) renderBatch(b renderBatch) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		q.log.Error("panic while rendering applied events; rebuilding the views", "index", b.index, "panic", r,
			"stack", string(debug.Stack()))
		defer func() {
			if r := recover(); r != nil {
				q.log.Error("panic while rebuilding the views", "index", b.index, "panic", r, "stack", string(debug.Stack()))
			}
		}()
		q.resync(b.index)
	}()
	if b.resync {
		q.resync(b.index)
	} else {
		q.render(b.index, b.events)
	}
}

// close stops the renderer after the batch it is rendering; what is still queued is dropped
// (the node is stopping, its clients are gone) and every waiter is released.
func (q *renderQueue) close() {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.closed = true
	q.broadcast()
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	q.startOnce.Do(func() { close(q.done) }) // never started: nothing to wait for
	<-q.done
}
