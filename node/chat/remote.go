package chat

import (
	"context"
	"errors"
	"fmt"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/stream"
)

// Source says where a batch of events made elsewhere comes from, and so which rules it meets.
type Source struct {
	// Kind is stream.Cluster (another node of this cluster, through the event exchange) or
	// stream.Federation (a peer server); the accepted events are published on Stored with it.
	Kind stream.Source
	// Authority returns the checks one item from a federated server must pass (see Authority);
	// nil, or a nil answer, for a node of this cluster, which checked the event against the same
	// replicated state before storing it.
	Authority func(it stream.Item) *Authority
	// Ordered says each list is a log read after a cursor: once an item must wait (its message
	// is not here yet), the rest of its list waits too and is left alone, so that the caller's
	// cursor stays before it. Unordered (a push), an item that must wait is skipped.
	Ordered bool
}

// Batch is events made elsewhere, as this node stores them. A message's Origin is the node that
// made it; a federated server's events are made this node's own (Origin: this node), so that its
// logs carry them on through the cluster. A delete whose Origin is this node is filed in its
// deletions log; one made on another node of the cluster is only applied (the exchange copies
// that node's log). A reaction is filed in its Origin's reaction log.
type Batch struct {
	Messages  []*eventstore.Message // messages and edits; a stored one gets its Seq
	Deletions []eventstore.Deletion
	Reactions []eventstore.ReactionEvent
	// Ephemeral are live-only channel TAGMSGs, status messages and WALLOPS: published, never stored.
	Ephemeral []*eventstore.Message
}

// Result holds each item's outcome, index for index: Accepted (stored now: published), Duplicate
// (stored before), Wait, or the rule that refused it; "" for an item not reached because a store
// failure stopped the batch.
type Result struct {
	Messages, Deletions, Reactions []Outcome
}

// AcceptRemote applies the acceptance rules to events made elsewhere, stores what they accept
// and publishes each newly stored event on Stored with the source's kind, after the durable
// commit. Messages are deduplicated by msgid and stored in one commit (edits from a federated
// server meet AcceptEdit first); deletes meet AcceptDeletion, reactions AcceptReaction. An error
// is a store failure: what was stored before it is published, and the batch may be retried
// (every step is idempotent).
func (s *Service) AcceptRemote(ctx context.Context, src Source, b Batch) (Result, error) {
	res := Result{Messages: make([]Outcome, len(b.Messages)), Deletions: make([]Outcome, len(b.Deletions)),
		Reactions: make([]Outcome, len(b.Reactions))}
	if s.cfg.Store == nil {
		return res, errors.New("chat: accept remote events: this node keeps no event store")
	}
	if err := s.acceptMessages(ctx, src, b.Messages, res.Messages); err != nil {
		return res, err
	}
	if err := s.acceptDeletions(ctx, src, b.Deletions, res.Deletions); err != nil {
		return res, err
	}
	if err := s.acceptReactions(ctx, src, b.Reactions, res.Reactions); err != nil {
		return res, err
	}
	for _, m := range b.Ephemeral {
		s.publishFrom(src, stream.Item{Kind: stream.KindEphemeral, Message: m})
	}
	return res, nil
}

func (s *Service) publishFrom(src Source, it stream.Item) {
	if s.cfg.Stored != nil {
		it.Source = src.Kind
		s.cfg.Stored.Publish(it)
	}
}

func (src Source) authority(it stream.Item) *Authority {
	if src.Authority == nil {
		return nil
	}
	return src.Authority(it)
}

// acceptMessages stores the accepted messages in one commit. An edit from a federated server
// whose root is earlier in the batch is checked once the messages before it are stored.
func (s *Service) acceptMessages(ctx context.Context, src Source, msgs []*eventstore.Message, out []Outcome) error {
	var pending []*eventstore.Message
	var at []int
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		t := s.dl.begin(pending)
		err := s.cfg.Store.Append(ctx, pending...)
		s.dl.stored(t, pending)
		if err != nil && !errors.Is(err, eventstore.ErrDuplicate) {
			s.dl.delivered(pending) // stored or not, nothing will deliver them
			return fmt.Errorf("chat: store %d remote messages: %w", len(pending), err)
		}
		for j, m := range pending {
			if m.Seq == 0 {
				out[at[j]] = Duplicate // stored before: pushed earlier, or pulled twice
				continue
			}
			out[at[j]] = Accepted
			s.publishFrom(src, stream.Item{Kind: stream.KindMessage, Message: m})
		}
		if s.cfg.Stored != nil {
			s.dl.deliveredWhenHandled(pending)
		} else {
			s.dl.delivered(pending)
		}
		pending, at = pending[:0], at[:0]
		return nil
	}
	waiting := false
	for i, m := range msgs {
		if waiting {
			out[i] = Wait
			continue
		}
		o := Accepted
		if m.ReplacesMsgID != "" {
			var err error
			auth := src.authority(stream.Item{Kind: stream.KindMessage, Message: m})
			o, err = AcceptEdit(ctx, s.cfg.Store, m, auth)
			if err == nil && o == Wait && len(pending) > 0 {
				if err := flush(); err != nil {
					return err
				}
				o, err = AcceptEdit(ctx, s.cfg.Store, m, auth)
			}
			if err != nil {
				return err
			}
		}
		switch o {
		case Accepted:
			pending, at = append(pending, m), append(at, i)
		case Wait:
			out[i], waiting = Wait, src.Ordered
		default:
			out[i] = o
		}
	}
	return flush()
}

// acceptDeletions applies the accepted deletes in order.
func (s *Service) acceptDeletions(ctx context.Context, src Source, dels []eventstore.Deletion, out []Outcome) error {
	for i := range dels {
		d := &dels[i]
		if i > 0 && src.Ordered && out[i-1] == Wait {
			out[i] = Wait
			continue
		}
		_, o, err := AcceptDeletion(ctx, s.cfg.Store, *d, src.authority(stream.Item{Kind: stream.KindDeletion, Deletion: d}))
		if err != nil {
			return err
		}
		if o != Accepted {
			if o == Malformed {
				s.log.Warn("skipping a delete that names its message in another venue", "root", d.RootMsgID, "source", src.Kind)
			}
			out[i] = o
			continue
		}
		if d.Origin == s.cfg.NodeName {
			err = s.cfg.Store.DeleteAt(ctx, d.RootMsgID, d.At, d.Origin, d.Deleter)
		} else {
			err = s.cfg.Store.Delete(ctx, d.RootMsgID, d.At)
		}
		switch {
		case errors.Is(err, eventstore.ErrNotFound):
			out[i] = Wait
			continue
		case err != nil:
			return fmt.Errorf("chat: delete %s: %w", d.RootMsgID, err)
		}
		out[i] = Accepted
		s.publishFrom(src, stream.Item{Kind: stream.KindDeletion, Deletion: d})
	}
	return nil
}

// acceptReactions files the accepted reactions in order.
func (s *Service) acceptReactions(ctx context.Context, src Source, rs []eventstore.ReactionEvent, out []Outcome) error {
	for i := range rs {
		r := &rs[i]
		if i > 0 && src.Ordered && out[i-1] == Wait {
			out[i] = Wait
			continue
		}
		auth := src.authority(stream.Item{Kind: stream.KindReaction, Reaction: r})
		o, err := AcceptReaction(ctx, s.cfg.Store, *r, auth)
		if err != nil {
			return err
		}
		if o != Accepted {
			out[i] = o
			continue
		}
		applied, err := s.cfg.Store.FileReaction(ctx, *r)
		switch {
		case errors.Is(err, eventstore.ErrNotFound) && auth != nil:
			out[i] = NoRoot // the root was deleted (or moved) since it was read
		case errors.Is(err, eventstore.ErrNotFound):
			out[i] = Wait
		case errors.Is(err, eventstore.ErrDuplicate): // filed before (pushed, then pulled): not published again
			out[i] = Duplicate
		case errors.Is(err, eventstore.ErrInvalidArgument):
			s.log.Warn("skipping an invalid reaction", "event", r.EventID, "source", src.Kind, "err", err)
			out[i] = Malformed
		case err != nil:
			return fmt.Errorf("chat: file reaction %s: %w", r.EventID, err)
		default:
			out[i] = Accepted
			if applied {
				s.publishFrom(src, stream.Item{Kind: stream.KindReaction, Reaction: r})
			}
		}
	}
	return nil
}
