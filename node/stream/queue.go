package stream

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Mode is what a full subscriber queue does to its publisher.
type Mode int

const (
	// Backpressure makes the publisher wait while the queue is full; nothing is dropped.
	Backpressure Mode = iota
	// DropAndResync replaces a full queue by one gap marker; the publisher never waits.
	DropAndResync
)

func (m Mode) String() string {
	switch m {
	case Backpressure:
		return "backpressure"
	case DropAndResync:
		return "drop-and-resync"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// DefaultQueueLimit bounds a subscriber's queue (in items, or events for Applied) when its
// stream's Options leave QueueLimit at zero.
const DefaultQueueLimit = 64 << 10

// hub fans values out to subscribers, each with its own bounded queue and goroutine. T is an
// Entry or an Item; the hub learns what it needs of T from its three functions.
type hub[T any] struct {
	stream string
	limit  int
	log    *slog.Logger
	weight func(T) int           // how much of the queue a value takes (≥ 0)
	gap    func(last T) T        // the marker that replaces dropped values, built from the newest
	seq    func(T) uint64        // the value's position (Applied: its index); 0 when unordered
	before func(sub string, v T) // test hook run before each delivery; may panic

	mu      sync.Mutex // lock tier 9 (leaf): held only to change a subscriber list, never while delivering
	subs    []*sub[T]
	closed  bool
	counter atomic.Uint64 // publishes so far, the position of values when seq is nil
}

// position is v's position: its own (ordered streams) or the next publish count.
func (h *hub[T]) position(v T) uint64 {
	if h.seq != nil {
		return h.seq(v)
	}
	return h.counter.Add(1)
}

// queued is a value waiting in a subscriber's queue, with its position.
type queued[T any] struct {
	v   T
	seq uint64
}

func newHub[T any](stream string, limit int, log *slog.Logger, weight func(T) int, gap func(T) T, seq func(T) uint64) *hub[T] {
	// seq nil: positions come from the publish counter (see position).
	if limit <= 0 {
		limit = DefaultQueueLimit
	}
	if log == nil {
		log = slog.Default()
	}
	return &hub[T]{stream: stream, limit: limit, log: log, weight: weight, gap: gap, seq: seq}
}

// sub is one subscriber's queue.
type sub[T any] struct {
	h    *hub[T]
	name string
	mode Mode
	want func(T) bool // nil: every value
	fn   func(T)

	mu      sync.Mutex  // lock tier 9 (leaf): never held while fn runs
	pending []queued[T] // FIFO; pending[head:] wait
	head    int
	queued  int    // weight queued and not yet handled, the value being handled included
	busy    uint64 // seq of the value being handled (≥ 1), 0 when idle
	dropped uint64 // values dropped (DropAndResync), for the log and Stats
	changed chan struct{}
	watched bool
	closed  bool
	wake    chan struct{}
	done    chan struct{}
}

// subscribe adds a subscriber and starts its goroutine.
func (h *hub[T]) subscribe(name string, mode Mode, want func(T) bool, fn func(T)) error {
	if fn == nil {
		return fmt.Errorf("stream %s: subscriber %q: nil function", h.stream, name)
	}
	if mode != Backpressure && mode != DropAndResync {
		return fmt.Errorf("stream %s: subscriber %q: unknown mode %d", h.stream, name, int(mode))
	}
	s := &sub[T]{h: h, name: name, mode: mode, want: want, fn: fn, changed: make(chan struct{}),
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return fmt.Errorf("stream %s: subscriber %q: stream closed", h.stream, name)
	}
	for _, o := range h.subs {
		if o.name == name {
			return fmt.Errorf("stream %s: subscriber %q already subscribed", h.stream, name)
		}
	}
	// Copy on write: publish reads the list without the lock held across deliveries.
	h.subs = append(append([]*sub[T](nil), h.subs...), s)
	go s.loop()
	return nil
}

func (h *hub[T]) subscribers() []*sub[T] {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.subs
}

// publish queues v for every subscriber that wants it, in subscription order.
func (h *hub[T]) publish(v T) {
	seq := h.position(v)
	for _, s := range h.subscribers() {
		if s.want == nil || s.want(v) {
			s.enqueue(v, seq)
		}
	}
}

func (s *sub[T]) enqueue(v T, seq uint64) {
	w := s.h.weight(v)
	s.mu.Lock()
	if s.mode == Backpressure {
		for !s.closed && s.queued > 0 && s.queued+w > s.h.limit {
			ch := s.watch()
			s.mu.Unlock()
			<-ch
			s.mu.Lock()
		}
	} else if s.queued > 0 && s.queued+w > s.h.limit {
		// Drop what waits (not the value being handled) and keep one marker built from the newest.
		n := len(s.pending) - s.head
		for i := s.head; i < len(s.pending); i++ {
			s.queued -= s.h.weight(s.pending[i].v)
		}
		clear(s.pending)
		s.pending, s.head = s.pending[:0], 0
		s.dropped += uint64(n) + 1
		s.h.log.Warn("subscriber fell behind; its queue was replaced by a resync", "stream", s.h.stream,
			"subscriber", s.name, "dropped", n+1)
		v = s.h.gap(v)
		w = s.h.weight(v)
	}
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.pending = append(s.pending, queued[T]{v: v, seq: seq})
	s.queued += w
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// waitThrough returns once no value with seq ≤ seq waits or is being handled, or when ctx ends
// (with its error) or the subscriber closes (nil).
func (s *sub[T]) waitThrough(ctx context.Context, seq uint64) error {
	for {
		s.mu.Lock()
		if s.closed || s.handledThrough(seq) {
			s.mu.Unlock()
			return nil
		}
		ch := s.watch()
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// handledThrough reports whether no value at or below seq waits or is being handled. On an
// ordered stream (Applied) values are queued in seq order, so only the oldest needs looking at;
// concurrent publishers of an unordered one may interleave, so its queue is scanned. s.mu is held.
func (s *sub[T]) handledThrough(seq uint64) bool {
	if s.busy != 0 && s.busy <= seq {
		return false
	}
	if s.h.seq != nil {
		return s.head == len(s.pending) || s.pending[s.head].seq > seq
	}
	for _, q := range s.pending[s.head:] {
		if q.seq <= seq {
			return false
		}
	}
	return true
}

// watch returns the channel closed at the next progress. s.mu is held.
func (s *sub[T]) watch() <-chan struct{} {
	s.watched = true
	return s.changed
}

// broadcast wakes everyone waiting for progress; free when no one waits. s.mu is held.
func (s *sub[T]) broadcast() {
	if !s.watched {
		return
	}
	close(s.changed)
	s.changed, s.watched = make(chan struct{}), false
}

func (s *sub[T]) loop() {
	defer close(s.done)
	for {
		s.mu.Lock()
		for s.head == len(s.pending) && !s.closed {
			s.mu.Unlock()
			<-s.wake
			s.mu.Lock()
		}
		if s.closed {
			s.mu.Unlock()
			return
		}
		q := s.pending[s.head]
		v := q.v
		s.pending[s.head] = queued[T]{}
		s.head++
		if s.head == len(s.pending) { // drained: reuse the backing array
			s.pending, s.head = s.pending[:0], 0
		} else if s.head >= 1024 && s.head*2 >= len(s.pending) { // never drained: drop the done prefix
			n := copy(s.pending, s.pending[s.head:])
			clear(s.pending[n:])
			s.pending, s.head = s.pending[:n], 0
		}
		s.busy = max(q.seq, 1)
		s.mu.Unlock()

		s.handle(v)

		s.mu.Lock()
		s.busy = 0
		s.queued -= s.h.weight(v)
		s.broadcast()
		s.mu.Unlock()
	}
}

// handle runs fn on v. A panic is logged with its stack and the subscriber is handed the gap
// marker, so it rebuilds what v may have left half done; a panic there too is only logged.
func (s *sub[T]) handle(v T) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		s.h.log.Error("panic in a stream subscriber; handing it a resync", "stream", s.h.stream, "subscriber", s.name,
			"panic", r, "stack", string(debug.Stack()))
		defer func() {
			if r := recover(); r != nil {
				s.h.log.Error("panic in a stream subscriber's resync", "stream", s.h.stream, "subscriber", s.name,
					"panic", r, "stack", string(debug.Stack()))
			}
		}()
		s.fn(s.h.gap(v))
	}()
	if s.h.before != nil {
		s.h.before(s.name, v)
	}
	s.fn(v)
}

// close stops the subscriber after the value it is handling; what waits is dropped and every
// waiter (publisher or proposer) is released.
func (s *sub[T]) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.broadcast()
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	<-s.done
}

// close stops every subscriber; later publishes and subscriptions are refused or ignored.
func (h *hub[T]) close() {
	h.mu.Lock()
	h.closed = true
	subs := h.subs
	h.subs = nil
	h.mu.Unlock()
	for _, s := range subs {
		s.close()
	}
}

// Stats is one subscriber's queue, for metrics and tests.
type Stats struct {
	Name    string
	Mode    Mode
	Queued  int    // weight waiting or being handled
	Dropped uint64 // values replaced by gap markers so far
}

func (h *hub[T]) stats() []Stats {
	var out []Stats
	for _, s := range h.subscribers() {
		s.mu.Lock()
		out = append(out, Stats{Name: s.name, Mode: s.mode, Queued: s.queued, Dropped: s.dropped})
		s.mu.Unlock()
	}
	return out
}
