package stream

import (
	"context"
	"log/slog"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// Entry is one applied Raft entry's events, or a resync.
type Entry struct {
	Index  uint64      // the entry's log index (for a resync: the state's index it covers)
	Events []fsm.Event // in the order Apply produced them; shared, never modify
	// Resync says the events of some entries through Index will never be delivered (a snapshot
	// restore, a queue that overflowed, a panic in this subscriber): rebuild from the state.
	Resync bool
}

// Applied is the stream of applied Raft entries. The state machine publishes into it (Publish is
// its fsm.Observer, Restored its fsm.RestoreObserver); surfaces subscribe.
type Applied struct {
	h *hub[Entry]
}

// AppliedOptions configure an Applied stream.
type AppliedOptions struct {
	// QueueLimit bounds each subscriber's queue, in events (0: DefaultQueueLimit). A Backpressure
	// subscriber past it makes Raft's apply loop wait.
	QueueLimit int
	Logger     *slog.Logger
	// BeforeDeliver, when set, runs before each delivery on the subscriber's goroutine. It exists
	// for fault injection in tests: a panic there is handled as the subscriber's own.
	BeforeDeliver func(subscriber string, e Entry)
}

// NewApplied returns an Applied stream with no subscribers.
func NewApplied(o AppliedOptions) *Applied {
	h := newHub("applied", o.QueueLimit, o.Logger,
		func(e Entry) int { return len(e.Events) },
		func(e Entry) Entry { return Entry{Index: e.Index, Resync: true} },
		func(e Entry) uint64 { return e.Index })
	h.before = o.BeforeDeliver
	return &Applied{h: h}
}

// Subscribe adds a subscriber: fn is called on the subscriber's own goroutine with every entry
// applied after this call, in log order, and with resyncs. Call it from the surface's constructor,
// before the node serves; entries applied before it are not delivered (read the state then).
// Names are unique per stream. fn must never propose and wait for the result when mode is
// Backpressure: proposers wait for it (see WaitRendered).
func (a *Applied) Subscribe(name string, mode Mode, fn func(Entry)) error {
	return a.h.subscribe(name, mode, nil, fn)
}

// Publish queues an applied entry's events for every subscriber; it is the state machine's
// fsm.Observer and runs on Raft's apply path. It waits while a Backpressure subscriber's queue is
// full (one entry larger than the limit still enters an empty queue). After Close it returns at once.
func (a *Applied) Publish(index uint64, events []fsm.Event) {
	a.h.publish(Entry{Index: index, Events: events})
}

// Restored tells every subscriber that the state was replaced by a snapshot at index; it is the
// state machine's fsm.RestoreObserver.
func (a *Applied) Restored(index uint64) {
	a.h.publish(Entry{Index: index, Resync: true})
}

// WaitRendered returns once every Backpressure subscriber has handled every entry at or below
// index, or when ctx ends (with its error) or the stream closes (nil). Proposers call it after
// their entry applied, so a command's own effects reach its client before the command's replies.
// DropAndResync subscribers are not waited for.
func (a *Applied) WaitRendered(ctx context.Context, index uint64) error {
	for _, s := range a.h.subscribers() {
		if s.mode != Backpressure {
			continue
		}
		if err := s.waitThrough(ctx, index); err != nil {
			return err
		}
	}
	return nil
}

// Stats reports every subscriber's queue.
func (a *Applied) Stats() []Stats { return a.h.stats() }

// Close stops every subscriber after the entry it is handling; queued entries are dropped and
// every publisher and waiter is released. Close it after Raft: an Apply waiting on a full queue is
// released either way.
func (a *Applied) Close() { a.h.close() }
