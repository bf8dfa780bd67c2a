package irc

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/palaver-chat/palaver/federation/eventstore"
	"github.com/palaver-chat/palaver/federation/signing"
)

// A reaction is a TAGMSG carrying +react=<emoji> (or +draft/react) and +reply=<msgid>; an unreact
// carries +freeq.at/unreact=<emoji>. Reactions are filed by the root message, once per reactor and
// emoji, and replayed in history as a +freeq.at/reactions tally. Each react and unreact is also
// filed, as the TAGMSG it came as, in the store's reaction log, which the other nodes of the
// cluster copy (federation/exchange), so that every node delivers it and counts it.

const tagReactions = "+freeq.at/reactions"

type reaction struct {
	emoji, root string
	remove      bool
}

// prepareReaction resolves a reaction's target to its root in venue and points +reply at it. It
// reports ok=false after answering a refusal; a TAGMSG that is no reaction returns a nil reaction.
func (c *client) prepareReaction(rb *respBuf, cmd, venue string, tags map[string]string) (*reaction, bool) {
	if cmd != "TAGMSG" || venue == "" {
		return nil, true
	}
	r := &reaction{emoji: tags["+react"]}
	if r.emoji == "" {
		r.emoji = tags["+draft/react"]
	}
	if r.emoji == "" {
		if r.emoji = tags["+freeq.at/unreact"]; r.emoji == "" {
			return nil, true
		}
		r.remove = true
	}
	if len(r.emoji) > eventstore.MaxEmojiBytes {
		rb.add(c.failMsg("TAGMSG", "INVALID_REACTION", "That reaction is too long"))
		return nil, false
	}
	subject := signing.ReplyFromTags(tags)
	if subject == "" {
		rb.add(c.failMsg("TAGMSG", "INVALID_REACTION", "A reaction names its message with +reply"))
		return nil, false
	}
	root, ok := c.resolveRoot(rb, "TAGMSG", venue, subject)
	if !ok {
		return nil, false
	}
	if _, signed := tags[tagSig]; signed && root.MsgID != subject {
		rb.add(c.failMsg("TAGMSG", "INVALID_REFERENCE", "Signed events must name the root message", subject))
		return nil, false
	}
	r.root = root.MsgID
	if _, ok := tags["+reply"]; ok {
		tags["+reply"] = root.MsgID
	} else {
		tags["+draft/reply"] = root.MsgID
	}
	return r, true
}

// applyReaction files an accepted reaction, made as the TAGMSG eventID in channel with tags (after
// signing), and hands it to the other nodes.
func (c *client) applyReaction(rb *respBuf, r *reaction, channel, eventID string, tags map[string]string, at time.Time) bool {
	reactor := c.currentDID()
	if reactor == "" {
		reactor = "nick:" + c.nick
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, 10*time.Second)
	defer cancel()
	ev := eventstore.ReactionEvent{
		EventID: eventID, Origin: c.s.cfg.NodeName, Root: r.root, Reactor: reactor, ReactorNick: c.nick,
		Emoji: r.emoji, Remove: r.remove, At: at, Venue: channel, Sender: c.hostmask(), SenderDID: c.currentDID(),
		Tags: copyTags(tags),
	}
	if _, err := c.s.history.FileReaction(ctx, ev); err != nil {
		if errors.Is(err, eventstore.ErrDuplicate) {
			rb.add(c.failMsg("TAGMSG", "EVENTID_IN_USE", "That event id is already in use"))
			return false
		}
		c.s.log.Error("store reaction", "root", r.root, "err", err)
		rb.add(c.failMsg("TAGMSG", "TEMPORARILY_UNAVAILABLE", "The reaction could not be stored"))
		return false
	}
	c.s.publishReaction(ev)
	return true
}

// withReactions adds each message's reaction tally to its tags (as a JSON object of counts).
func withReactions(ctx context.Context, h History, msgs []eventstore.Message) {
	if len(msgs) == 0 {
		return
	}
	roots := make([]string, len(msgs))
	for i := range msgs {
		roots[i] = msgs[i].MsgID
	}
	tallies, err := h.Reactions(ctx, roots)
	if err != nil || len(tallies) == 0 {
		return
	}
	for i := range msgs {
		t := tallies[msgs[i].MsgID]
		if len(t) == 0 {
			continue
		}
		data, err := json.Marshal(t)
		if err != nil {
			continue
		}
		tags := copyTags(msgs[i].Tags)
		tags[tagReactions] = string(data)
		msgs[i].Tags = tags
	}
}
