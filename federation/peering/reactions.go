package peering

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/palaver-chat/palaver/federation/eventstore"
	"github.com/palaver-chat/palaver/federation/signing"
)

// Reactions cross a link as the TAGMSG their author sent, signature included. The sending node's
// outbox reads them from the store's reaction log (eventstore.Store.ReactionLogAfter: the reacts
// and unreacts made on this node, in order) after a durable per-peer cursor, so a reaction waits
// across failed sends and restarts as messages do. A store without that log leaves them in the
// outbox in memory (bounded; lost if the node restarts). The receiver files a reaction only for a root it holds in that linked channel, and only with the
// reactor's valid signature: the reactor's own key, or a key the peer vouches for when the reactor
// is not known here from anywhere else. A reaction may not name a user of this server.

// maxQueuedReactions bounds the reactions waiting in memory for one peer.
const maxQueuedReactions = 1000

// reactionFiler files a reaction in the store's reaction log (*eventstore.Store does).
type reactionFiler interface {
	FileReaction(ctx context.Context, r eventstore.ReactionEvent) (applied bool, err error)
}

// reactionLog is the store's durable log of the reactions made on this node (*eventstore.Store
// keeps one).
type reactionLog interface {
	ReactionLogAfter(ctx context.Context, origin string, afterSeq int64, limit int) ([]eventstore.ReactionEvent, error)
}

// Reacted tells the outbox of a channel linked with a peer that a reaction was made on this node
// (a no-op for any other channel): with a reaction log, where it is already filed, the outbox is
// only woken; otherwise it is queued in memory. tags are the TAGMSG's client tags after signing.
func (f *Federation) Reacted(channel, eventID, sender, senderNick, senderDID string, tags map[string]string, at time.Time) {
	peerDID := f.PeerOf(channel)
	o := f.outboxes[peerDID]
	if o == nil || senderDID == "" || tags[TagOrigin] != "" {
		return
	}
	if _, durable := f.cfg.Store.(reactionLog); durable {
		o.kick()
		return
	}
	r := Reaction{EventID: eventID, Venue: channel, Sender: sender, SenderNick: senderNick, SenderDID: senderDID,
		Tags: make(map[string]string, len(tags)), AtMS: at.UnixMilli()}
	for k, v := range tags {
		r.Tags[k] = v
	}
	o.mu.Lock()
	full := len(o.reactions) >= maxQueuedReactions
	if !full {
		o.reactions = append(o.reactions, r)
	}
	o.mu.Unlock()
	if full {
		f.metrics.count(peerDID, "out", "dropped", 1)
		return
	}
	o.kick()
}

// collectReactions adds to p the reactions of the store's log after the peer's cursor that are
// due: made here by an authenticated user, in a channel linked with the peer, not relayed from a
// peer, and newer than oldest. It takes at most a queue's share of the envelope.
func (o *outbox) collectReactions(ctx context.Context, p *pending, oldest time.Time) error {
	log, ok := o.f.cfg.Store.(reactionLog)
	if !ok {
		return nil
	}
	var err error
	if p.reactCursor, err = o.f.cfg.Store.Cursor(ctx, o.reactionCursor()); err != nil {
		return err
	}
	p.lastReaction = p.reactCursor
	share := queueShare - len(p.reactions)
	if share <= 0 {
		p.moreToExamine = true
		return nil
	}
	rows, err := log.ReactionLogAfter(ctx, o.f.cfg.NodeName, p.reactCursor, share)
	if err != nil {
		return fmt.Errorf("outbox reactions: %w", err)
	}
	p.moreToExamine = p.moreToExamine || len(rows) == share
	for _, r := range rows {
		p.lastReaction = r.Seq
		if o.f.Linked(o.peer.DID, r.Venue) && r.Tags[TagOrigin] == "" && r.SenderDID != "" && !r.At.Before(oldest) {
			p.reactions = append(p.reactions, Reaction{EventID: r.EventID, Venue: r.Venue, Sender: r.Sender,
				SenderNick: r.ReactorNick, SenderDID: r.SenderDID, Tags: r.Tags, AtMS: r.At.UnixMilli()})
		}
	}
	return nil
}

// reactionOf reads what a reaction's tags ask: the emoji, whether it is an unreact, and the root.
func reactionOf(tags map[string]string) (emoji string, remove bool, root string) {
	emoji = tags[signing.TagReact]
	if emoji == "" {
		emoji = tags[signing.TagDraftReact]
	}
	if emoji == "" {
		emoji, remove = tags[signing.TagUnreact], true
	}
	return emoji, remove, signing.ReplyFromTags(tags)
}

// applyReaction checks and files one reaction from a peer, and shows it to local members.
func (f *Federation) applyReaction(ctx context.Context, peer Peer, r Reaction) (outcome, error) {
	if !validMsgID(r.EventID) || r.SenderDID == "" || !validDID(r.SenderDID) || len(r.Tags) > maxTags || r.SenderNick == "" {
		return outcomeMalformed, nil
	}
	if !f.Linked(peer.DID, r.Venue) {
		return outcomeNotLinked, nil
	}
	nick := sanitizeName(r.SenderNick)
	if f.ownedLocally(r.SenderDID, nick) {
		return outcomeImpostor, nil
	}
	tags := sanitizeTags(r.Tags)
	emoji, remove, rootID := reactionOf(tags)
	if emoji == "" || len(emoji) > eventstore.MaxEmojiBytes || !validMsgID(rootID) {
		return outcomeMalformed, nil
	}
	root, err := f.cfg.Store.Root(ctx, rootID)
	switch {
	case errors.Is(err, eventstore.ErrNotFound):
		return outcomeNoRoot, nil
	case err != nil:
		return "", err
	case root.Venue != r.Venue || root.MsgID != rootID || !root.DeletedAt.IsZero():
		return outcomeMalformed, nil
	}
	sig := checkSignature(ctx, f, peer, "TAGMSG", r.SenderDID, r.EventID, r.Venue, "", tags)
	if sig.verdict == verdictInvalid {
		return outcomeInvalidSig, nil
	}
	if !sig.speaksFor() {
		return outcomeUnsigned, nil
	}
	at := time.UnixMilli(r.AtMS)
	if now := f.cfg.Now(); r.AtMS <= 0 || at.After(now) {
		at = now
	}
	sender := sanitizeName(r.Sender)
	if sender == "" {
		sender = nick + "!~remote@" + originName(peer.DID)
	}
	tags[TagOrigin] = originName(peer.DID)
	applied := true
	if filer, ok := f.cfg.Store.(reactionFiler); ok {
		// Filed in this node's reaction log, so the other nodes of the cluster copy it too (the
		// origin tag keeps it from being sent back to a peer).
		applied, err = filer.FileReaction(ctx, eventstore.ReactionEvent{EventID: r.EventID, Origin: f.cfg.NodeName,
			Root: rootID, Reactor: r.SenderDID, ReactorNick: nick, Emoji: emoji, Remove: remove, At: at, Venue: r.Venue,
			Sender: sender, SenderDID: r.SenderDID, Tags: tags})
		if errors.Is(err, eventstore.ErrDuplicate) {
			return outcomeDuplicate, nil
		}
	} else if remove {
		err = f.cfg.Store.Unreact(ctx, rootID, r.SenderDID, emoji)
	} else {
		err = f.cfg.Store.React(ctx, rootID, r.SenderDID, nick, emoji, at)
	}
	if err != nil {
		return "", err
	}
	if f.cfg.Deliver != nil && applied {
		f.cfg.Deliver(eventstore.Message{MsgID: r.EventID, Venue: r.Venue, Command: "TAGMSG", Sender: sender,
			SenderNick: nick, SenderDID: r.SenderDID, Tags: tags, Time: at, Origin: f.cfg.NodeName})
	}
	return outcomeStored, nil
}
