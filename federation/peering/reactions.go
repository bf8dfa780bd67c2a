package peering

import (
	"context"
	"errors"
	"time"

	"github.com/palaver-chat/palaver/federation/eventstore"
	"github.com/palaver-chat/palaver/federation/signing"
)

// Reactions cross a link as the TAGMSG their author sent, signature included. They wait in the
// sending node's outbox in memory (bounded; kept across failed sends, lost if the node restarts:
// the event store files reactions by root, without a sequence an outbox could follow). The
// receiver files a reaction only for a root it holds in that linked channel, and only with the
// reactor's valid signature: the reactor's own key, or a key the peer vouches for when the reactor
// is not known here from anywhere else. A reaction may not name a user of this server.

// maxQueuedReactions bounds the reactions waiting for one peer.
const maxQueuedReactions = 1000

// Reacted queues a reaction made on this node in a channel linked with a peer (a no-op for any
// other channel). tags are the TAGMSG's client tags after signing.
func (f *Federation) Reacted(channel, eventID, sender, senderNick, senderDID string, tags map[string]string, at time.Time) {
	peerDID := f.PeerOf(channel)
	o := f.outboxes[peerDID]
	if o == nil || senderDID == "" || tags[TagOrigin] != "" {
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
	if remove {
		err = f.cfg.Store.Unreact(ctx, rootID, r.SenderDID, emoji)
	} else {
		err = f.cfg.Store.React(ctx, rootID, r.SenderDID, nick, emoji, at)
	}
	if err != nil {
		return "", err
	}
	sender := sanitizeName(r.Sender)
	if sender == "" {
		sender = nick + "!~remote@" + originName(peer.DID)
	}
	tags[TagOrigin] = originName(peer.DID)
	if f.cfg.Deliver != nil {
		f.cfg.Deliver(eventstore.Message{MsgID: r.EventID, Venue: r.Venue, Command: "TAGMSG", Sender: sender,
			SenderNick: nick, SenderDID: r.SenderDID, Tags: tags, Time: at, Origin: f.cfg.NodeName})
	}
	return outcomeStored, nil
}
