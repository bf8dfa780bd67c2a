package stream

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/palaver-chat/palaver/node/eventstore"
)

// Source says where a stored item came from.
type Source int

const (
	// Local: made by a client of this node.
	Local Source = iota + 1
	// Cluster: made on another node of this cluster and received through the event exchange.
	Cluster
	// Federation: made on a peer server and accepted through federation.
	Federation
)

func (s Source) String() string {
	switch s {
	case Local:
		return "local"
	case Cluster:
		return "cluster"
	case Federation:
		return "federation"
	}
	return fmt.Sprintf("Source(%d)", int(s))
}

// Kind says what a stored item is.
type Kind int

const (
	// KindMessage: a PRIVMSG, NOTICE or stored TAGMSG, or an edit (Message.ReplacesMsgID set).
	KindMessage Kind = iota + 1
	// KindDeletion: a delete of a stored message.
	KindDeletion
	// KindReaction: a react or unreact, filed and applied.
	KindReaction
	// KindEphemeral: a live-only channel TAGMSG (typing), status message or WALLOPS; relayed, never
	// stored.
	KindEphemeral
)

func (k Kind) String() string {
	switch k {
	case KindMessage:
		return "message"
	case KindDeletion:
		return "deletion"
	case KindReaction:
		return "reaction"
	case KindEphemeral:
		return "ephemeral"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Item is one stored (or, for KindEphemeral, relayed) chat event. Exactly the field its Kind names
// is set, unless Gap is. Values are shared between subscribers: never modify them.
type Item struct {
	Kind     Kind
	Source   Source
	Message  *eventstore.Message       // KindMessage, KindEphemeral
	Deletion *eventstore.Deletion      // KindDeletion
	Reaction *eventstore.ReactionEvent // KindReaction
	// Gap says items for this subscriber were dropped (its queue overflowed, or it panicked):
	// catch up from the durable log. No other field is set.
	Gap bool
}

// Venue is the channel or DM venue the item concerns ("" for a gap).
func (it Item) Venue() string {
	switch {
	case it.Message != nil:
		return it.Message.Venue
	case it.Deletion != nil:
		return it.Deletion.Venue
	case it.Reaction != nil:
		return it.Reaction.Venue
	}
	return ""
}

// Stored is the stream of chat events this node stored. Every path that stores one publishes it,
// after the durable commit: the IRC edge (Local), the event exchange (Cluster), federation
// (Federation).
type Stored struct {
	h *hub[Item]
}

// StoredOptions configure a Stored stream.
type StoredOptions struct {
	// QueueLimit bounds each subscriber's queue, in items (0: DefaultQueueLimit).
	QueueLimit int
	Logger     *slog.Logger
	// BeforeDeliver, when set, runs before each delivery on the subscriber's goroutine (fault
	// injection in tests: a panic there is handled as the subscriber's own).
	BeforeDeliver func(subscriber string, it Item)
}

// NewStored returns a Stored stream with no subscribers.
func NewStored(o StoredOptions) *Stored {
	h := newHub("stored", o.QueueLimit, o.Logger,
		func(Item) int { return 1 },
		func(Item) Item { return Item{Gap: true} },
		nil)
	h.before = o.BeforeDeliver
	return &Stored{h: h}
}

// Subscribe adds a subscriber that gets the items of the given sources (none: every source), in
// the order they were published, on its own goroutine. Call it from the surface's constructor.
func (s *Stored) Subscribe(name string, mode Mode, fn func(Item), sources ...Source) error {
	var want func(Item) bool
	if len(sources) > 0 {
		var mask [Federation + 1]bool
		for _, src := range sources {
			if src < Local || src > Federation {
				return fmt.Errorf("stream stored: subscriber %q: unknown source %d", name, int(src))
			}
			mask[src] = true
		}
		want = func(it Item) bool { return it.Gap || mask[it.Source] }
	}
	return s.h.subscribe(name, mode, want, fn)
}

// Publish hands an item to every subscriber that wants it. Call it only after the item is durably
// stored (KindEphemeral: when it is relayed). It waits while a Backpressure subscriber's queue is
// full; a publisher must therefore never be a Backpressure subscriber's own goroutine.
func (s *Stored) Publish(it Item) {
	s.h.publish(it)
}

// PublishMessage publishes a stored message (or edit).
func (s *Stored) PublishMessage(src Source, m eventstore.Message) {
	s.Publish(Item{Kind: KindMessage, Source: src, Message: &m})
}

// PublishDeletion publishes a stored delete.
func (s *Stored) PublishDeletion(src Source, d eventstore.Deletion) {
	s.Publish(Item{Kind: KindDeletion, Source: src, Deletion: &d})
}

// PublishReaction publishes a filed and applied react or unreact.
func (s *Stored) PublishReaction(src Source, r eventstore.ReactionEvent) {
	s.Publish(Item{Kind: KindReaction, Source: src, Reaction: &r})
}

// PublishEphemeral publishes a relayed, never stored, channel TAGMSG, status message or WALLOPS.
func (s *Stored) PublishEphemeral(src Source, m eventstore.Message) {
	s.Publish(Item{Kind: KindEphemeral, Source: src, Message: &m})
}

// Sync returns once every subscriber has handled every item published before the call, or when
// ctx ends (with its error). For tests and orderly shutdown: publishers never need it.
func (s *Stored) Sync(ctx context.Context) error {
	seq := s.h.counter.Load()
	for _, sub := range s.h.subscribers() {
		if err := sub.waitThrough(ctx, seq); err != nil {
			return err
		}
	}
	return nil
}

// Stats reports every subscriber's queue.
func (s *Stored) Stats() []Stats { return s.h.stats() }

// Close stops every subscriber; queued items are dropped and waiting publishers released.
func (s *Stored) Close() { s.h.close() }

// Streams are the node's two streams, handed to every surface's constructor.
type Streams struct {
	Applied *Applied
	Stored  *Stored
}

// Close closes both streams.
func (s *Streams) Close() {
	s.Applied.Close()
	s.Stored.Close()
}
