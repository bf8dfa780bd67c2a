package peering

import (
	"context"
	"maps"

	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/signing"
)

// Reactions cross a link as the TAGMSG their author sent, signature included. The exchange's
// stream sends them from the store's reaction log (Store.ReactionLogAfter: the reacts and
// unreacts made on this node, in order) after the durable per-peer cursor out:reactions:<peer>,
// so a reaction waits across failed sends and restarts as messages do (DueReaction says which). The receiver files a
// reaction only for a root it holds in that linked channel, and only with the reactor's valid
// signature: the reactor's own key, or a key the peer vouches for when the reactor is not known
// here from anywhere else. A reaction may not name a user of this server.

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
// The reaction's emoji, root and whether it is an unreact are read from the tags its author
// signed, never from the frame's other fields.
func (f *Federation) applyReaction(ctx context.Context, peer Peer, r eventstore.ReactionEvent) (outcome, error) {
	if !validMsgID(r.EventID) || r.SenderDID == "" || !validDID(r.SenderDID) || len(r.Tags) > maxTags || r.ReactorNick == "" {
		return outcomeMalformed, nil
	}
	if !f.Linked(peer.DID, r.Venue) {
		return outcomeNotLinked, nil
	}
	nick := sanitizeName(r.ReactorNick)
	if f.ownedLocally(r.SenderDID, nick) {
		return outcomeImpostor, nil
	}
	signed := sanitizeTags(r.Tags) // the tags the reactor signed
	emoji, remove, rootID := reactionOf(signed)
	if emoji == "" || len(emoji) > eventstore.MaxEmojiBytes || !validMsgID(rootID) {
		return outcomeMalformed, nil
	}
	at := r.At
	if now := f.cfg.Now(); at.UnixMilli() <= 0 || at.After(now) {
		at = now
	}
	sender := sanitizeName(r.Sender)
	if sender == "" {
		sender = nick + "!~remote@" + originName(peer.DID)
	}
	tags := maps.Clone(signed)
	tags[TagOrigin] = originName(peer.DID)
	// Filed in this node's reaction log, so the other nodes of the cluster copy it too (the origin
	// tag keeps it from being sent back to a peer).
	ev := eventstore.ReactionEvent{EventID: r.EventID, Origin: f.cfg.NodeName,
		Root: rootID, Reactor: r.SenderDID, ReactorNick: nick, Emoji: emoji, Remove: remove, At: at, Venue: r.Venue,
		Sender: sender, SenderDID: r.SenderDID, Tags: tags}
	// The root must be here, in this venue and not deleted (chat.AcceptReaction), and the
	// reactor's signature speak for it.
	res, err := f.pipe.Receive(ctx, f.source(peer, func(eventstore.Message) chat.Outcome {
		sig := checkSignature(ctx, f, peer, "TAGMSG", r.SenderDID, r.EventID, r.Venue, "", signed)
		switch {
		case sig.verdict == verdictInvalid:
			return chat.Outcome(outcomeInvalidSig)
		case !sig.speaksFor():
			return chat.Unsigned
		}
		return chat.Accepted
	}), chat.Batch{Reactions: []eventstore.ReactionEvent{ev}})
	if err != nil {
		return "", err
	}
	return outcome(res.Reactions[0]), nil
}
