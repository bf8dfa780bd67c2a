package exchange

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/federation/eventstore"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/stream"
)

// The inbound pipeline: one path for what every peer sends, a node of this cluster or a federated
// server. Each plane authenticates its peer first (a cluster node by its TLS certificate and
// signed request or frame; a server by its signed envelope, peering) and decodes its wire; then
//
//	trust gate (the allow-list's level) → acceptance rules → dedupe by msgid → store → Stored
//
// in Pipeline.Receive. The acceptance, deduplication, store and publication are one step, the
// message service's AcceptRemote (Acceptor): a message already stored is not stored again and
// is not published again, so nothing reaches local members twice whichever path brought it.
// Linked-channel authority (the home rule, requests and answers, presence) stays with peering,
// which plugs its checks in as the Source's Authority.

// Source is an authenticated peer as the pipeline sees it.
type Source struct {
	Peer Member        // who sent the batch, with its trust level
	Kind stream.Source // stream.Cluster or stream.Federation: what stored events are published as
	// Authority is what one item from a federated server must pass besides the common rules
	// (operators and signatures in local state); nil for a node of this cluster, which checked the
	// item against the same replicated state before it stored it.
	Authority func(it stream.Item) *chat.Authority
	// Ordered says each list is a log read after a cursor: once an item must wait (its message
	// is not here yet), the rest of its list waits too, so the caller's cursor stays before it.
	// Unordered (a push), an item that must wait is skipped, left to the log.
	Ordered bool
}

// Remote is a batch of events made elsewhere, as this node stores them. A federated server's
// events are made this node's own (Origin: this node) so the exchange carries them on through the
// cluster; a delete whose Origin is this node is filed in its deletions log, one made on another
// node is only applied.
type Remote struct {
	Messages  []*eventstore.Message // messages and edits; a stored one gets its Seq
	Deletions []eventstore.Deletion
	Reactions []eventstore.ReactionEvent
}

// Outcomes are each item's outcome, index for index: chat.Accepted (stored now, and published),
// chat.Duplicate (stored before), chat.Wait, or why it was refused; "" for an item not reached
// because a store failure stopped the batch.
type Outcomes struct {
	Messages, Deletions, Reactions []chat.Outcome
}

// Acceptor is the acceptance step: it applies the rules to a batch, stores what they accept
// (messages deduplicated by msgid, in one commit) and publishes what it newly stored on Stored
// with the source's kind. An error is a store failure; every step is idempotent, so the batch
// may be received again.
type Acceptor interface {
	AcceptRemote(ctx context.Context, src Source, b Remote) (Outcomes, error)
}

// Outcomes the pipeline itself gives.
const (
	NotAllowed chat.Outcome = "not-allowed" // beyond the peer's trust level
	NoRoot     chat.Outcome = "no-root"     // a reaction from a server to a message not held here
)

// Pipeline is the inbound pipeline of a node, shared by the exchange and peering.
type Pipeline struct {
	accept Acceptor
}

// NewPipeline builds the pipeline around an acceptance step.
func NewPipeline(a Acceptor) *Pipeline { return &Pipeline{accept: a} }

// Receive runs a batch from an authenticated peer through the trust gate and the acceptance
// step. A peer whose trust level does not let it originate events here (readonly) has every item
// refused with NotAllowed, and nothing changes.
func (p *Pipeline) Receive(ctx context.Context, src Source, b Remote) (Outcomes, error) {
	if !src.Peer.Trust.MayMessage() {
		return Outcomes{Messages: refuseAll(len(b.Messages)), Deletions: refuseAll(len(b.Deletions)),
			Reactions: refuseAll(len(b.Reactions))}, nil
	}
	return p.accept.AcceptRemote(ctx, src, b)
}

func refuseAll(n int) []chat.Outcome {
	out := make([]chat.Outcome, n)
	for i := range out {
		out[i] = NotAllowed
	}
	return out
}

// RulesStore is the event store as the acceptance rules write it.
type RulesStore interface {
	chat.Store
	Append(ctx context.Context, msgs ...*eventstore.Message) error
	Delete(ctx context.Context, rootMsgID string, at time.Time) error
	DeleteAt(ctx context.Context, rootMsgID string, at time.Time, origin string, by eventstore.Deleter) error
	FileReaction(ctx context.Context, r eventstore.ReactionEvent) (applied bool, err error)
}

// Rules is the acceptance step of node/chat's rules (AcceptEdit, AcceptDeletion) over the event
// store, publishing on the node's Stored stream.
type Rules struct {
	Store    RulesStore
	Stored   *stream.Stored // nil: nothing is published
	NodeName string         // this node: a delete of this Origin is filed in its deletions log
	Logger   *slog.Logger
}

// AcceptRemote implements Acceptor.
func (r *Rules) AcceptRemote(ctx context.Context, src Source, b Remote) (Outcomes, error) {
	out := Outcomes{Messages: make([]chat.Outcome, len(b.Messages)), Deletions: make([]chat.Outcome, len(b.Deletions)),
		Reactions: make([]chat.Outcome, len(b.Reactions))}
	if err := r.messages(ctx, src, b.Messages, out.Messages); err != nil {
		return out, err
	}
	if err := r.deletions(ctx, src, b.Deletions, out.Deletions); err != nil {
		return out, err
	}
	return out, r.reactions(ctx, src, b.Reactions, out.Reactions)
}

func (r *Rules) publish(src Source, it stream.Item) {
	if r.Stored != nil {
		it.Source = src.Kind
		r.Stored.Publish(it)
	}
}

func (src Source) authority(it stream.Item) *chat.Authority {
	if src.Authority == nil {
		return nil
	}
	return src.Authority(it)
}

// messages stores the accepted messages in one commit; a msgid already stored keeps Seq 0 and is
// not published again.
func (r *Rules) messages(ctx context.Context, src Source, msgs []*eventstore.Message, out []chat.Outcome) error {
	keep := make([]*eventstore.Message, 0, len(msgs))
	at := make([]int, 0, len(msgs))
	waiting := false
	for i, m := range msgs {
		if waiting {
			out[i] = chat.Wait
			continue
		}
		o := chat.Accepted
		if m.ReplacesMsgID != "" {
			var err error
			o, err = chat.AcceptEdit(ctx, r.Store, chat.RemoteEdit{Replaces: m.ReplacesMsgID, Venue: m.Venue,
				EditorDID: m.SenderDID, Tags: m.Tags, Authority: src.authority(stream.Item{Kind: stream.KindMessage, Message: m})})
			if err != nil {
				return err
			}
		}
		switch o {
		case chat.Accepted:
			keep, at = append(keep, m), append(at, i)
		case chat.Wait:
			out[i], waiting = chat.Wait, src.Ordered
		default:
			out[i] = o
		}
	}
	if len(keep) == 0 {
		return nil
	}
	if err := r.Store.Append(ctx, keep...); err != nil && !errors.Is(err, eventstore.ErrDuplicate) {
		return fmt.Errorf("store %d events from %s: %w", len(keep), src.Peer.DID, err)
	}
	for j, m := range keep {
		if m.Seq == 0 {
			out[at[j]] = chat.Duplicate
			continue
		}
		out[at[j]] = chat.Accepted
		r.publish(src, stream.Item{Kind: stream.KindMessage, Message: m})
	}
	return nil
}

// deletions applies the accepted deletes in order: the one acceptance rule of a delete made
// elsewhere (chat.AcceptDeletion), for a cluster node and a server alike.
func (r *Rules) deletions(ctx context.Context, src Source, dels []eventstore.Deletion, out []chat.Outcome) error {
	for i := range dels {
		d := &dels[i]
		if i > 0 && src.Ordered && out[i-1] == chat.Wait {
			out[i] = chat.Wait
			continue
		}
		nick, _, _ := strings.Cut(d.Sender, "!")
		_, o, err := chat.AcceptDeletion(ctx, r.Store, chat.RemoteDeletion{Root: d.RootMsgID, Venue: d.Venue,
			DeleterDID: d.SenderDID, DeleterNick: nick, Tags: d.Tags,
			Authority: src.authority(stream.Item{Kind: stream.KindDeletion, Deletion: d})})
		if err != nil {
			return fmt.Errorf("delete %s: %w", d.RootMsgID, err)
		}
		if o != chat.Accepted {
			if o == chat.Malformed && r.Logger != nil {
				r.Logger.Warn("skipping a delete that names its message in another venue", "root", d.RootMsgID,
					"venue", truncate(d.Venue, 80), "peer", src.Peer.DID)
			}
			out[i] = o
			continue
		}
		if d.Origin == r.NodeName {
			err = r.Store.DeleteAt(ctx, d.RootMsgID, d.At, d.Origin, d.Deleter)
		} else {
			err = r.Store.Delete(ctx, d.RootMsgID, d.At)
		}
		switch {
		case errors.Is(err, eventstore.ErrNotFound):
			out[i] = chat.Wait
			continue
		case err != nil:
			return fmt.Errorf("delete %s: %w", d.RootMsgID, err)
		}
		out[i] = chat.Accepted
		r.publish(src, stream.Item{Kind: stream.KindDeletion, Deletion: d})
	}
	return nil
}

// reactions files the reactions in order.
func (r *Rules) reactions(ctx context.Context, src Source, rs []eventstore.ReactionEvent, out []chat.Outcome) error {
	for i := range rs {
		ev := &rs[i]
		if i > 0 && src.Ordered && out[i-1] == chat.Wait {
			out[i] = chat.Wait
			continue
		}
		checked := src.authority(stream.Item{Kind: stream.KindReaction, Reaction: ev}) != nil
		applied, err := r.Store.FileReaction(ctx, *ev)
		switch {
		case errors.Is(err, eventstore.ErrNotFound) && checked:
			out[i] = NoRoot // the root was deleted (or moved) since the peer's checks read it
		case errors.Is(err, eventstore.ErrNotFound):
			out[i] = chat.Wait
		case errors.Is(err, eventstore.ErrDuplicate): // filed before (pushed, then pulled): not published again
			out[i] = chat.Duplicate
		case errors.Is(err, eventstore.ErrInvalidArgument):
			if r.Logger != nil {
				r.Logger.Warn("skipping an invalid reaction", "event", ev.EventID, "peer", src.Peer.DID, "err", err)
			}
			out[i] = chat.Malformed
		case err != nil:
			return fmt.Errorf("file reaction %s: %w", ev.EventID, err)
		default:
			out[i] = chat.Accepted
			if applied {
				r.publish(src, stream.Item{Kind: stream.KindReaction, Reaction: ev})
			}
		}
	}
	return nil
}
