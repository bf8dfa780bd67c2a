package irc

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/raft/fsm"
)

const maxHistoryLimit = 500 // ISUPPORT CHATHISTORY

// handleCHATHISTORY serves draft/chathistory: BEFORE, AFTER, LATEST, AROUND and BETWEEN with
// timestamp= and msgid= references, and TARGETS (chathistory_targets.go).
func handleCHATHISTORY(c *client, m ircmsg.Message, rb *respBuf) {
	sub := strings.ToUpper(m.Param(0))
	if sub == "TARGETS" {
		chathistoryTargets(c, m, rb)
		return
	}
	fail := func(code, text string, ctx ...string) {
		rb.add(c.failMsg("CHATHISTORY", code, text, ctx...))
	}
	if len(m.Params) < 4 || (sub == "BETWEEN" && len(m.Params) < 5) {
		fail("NEED_MORE_PARAMS", "Missing parameters", sub)
		return
	}
	switch sub {
	case "BEFORE", "AFTER", "LATEST", "AROUND", "BETWEEN":
	default:
		fail("INVALID_PARAMS", "Unknown subcommand", sub)
		return
	}
	target := m.Param(1)
	limitParam := m.Params[len(m.Params)-1]
	limit, err := strconv.Atoi(limitParam)
	if err != nil || limit < 1 {
		fail("INVALID_PARAMS", "Invalid limit", sub, limitParam)
		return
	}
	if limit > maxHistoryLimit {
		limit = maxHistoryLimit
	}
	ref1, ok := parseRef(m.Param(2), sub == "LATEST")
	if !ok {
		fail("INVALID_PARAMS", "Invalid message reference", sub, m.Param(2))
		return
	}
	var ref2 eventstore.Bound
	if sub == "BETWEEN" {
		if ref2, ok = parseRef(m.Param(3), false); !ok {
			fail("INVALID_PARAMS", "Invalid message reference", sub, m.Param(3))
			return
		}
	}
	venue, peer, ok := c.historyVenue(sub, target, fail)
	if !ok {
		return
	}
	if !strings.HasPrefix(venue, "dm:") {
		target, peer = venue, venue // the batch names the canonical channel name
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, 10*time.Second)
	defer cancel()
	if c.wantsPlayback(venue) {
		items, err := c.playbackHistory(ctx, sub, venue, ref1, ref2, limit)
		if err != nil && !errors.Is(err, eventstore.ErrNotFound) {
			c.s.log.Error("chathistory", "venue", venue, "err", err)
			fail("MESSAGE_ERROR", "History is unavailable", sub, target)
			return
		}
		c.sendHistoryBatchTo(rb, target, peer, items)
		return
	}
	var msgs []eventstore.Message
	h := c.historyView()
	switch sub {
	case "BEFORE":
		msgs, err = h.Before(ctx, venue, ref1, limit)
	case "AFTER":
		if ref1.MsgID != "" {
			msgs, err = afterArrival(ctx, h, venue, ref1.MsgID, limit)
		} else {
			msgs, err = h.After(ctx, venue, ref1, limit)
		}
	case "LATEST":
		msgs, err = h.Latest(ctx, venue, ref1, limit)
	case "AROUND":
		msgs, err = h.Around(ctx, venue, ref1, limit)
	case "BETWEEN":
		msgs, err = h.Between(ctx, venue, ref1, ref2, limit)
	}
	if err != nil && !errors.Is(err, eventstore.ErrNotFound) {
		c.s.log.Error("chathistory", "venue", venue, "err", err)
		fail("MESSAGE_ERROR", "History is unavailable", sub, target)
		return
	}
	withReactions(ctx, h, msgs)
	c.sendHistoryBatchTo(rb, target, peer, messageItems(msgs))
}

// parseRef parses "timestamp=<RFC 3339>", "msgid=<id>" or (when star is allowed) "*".
func parseRef(s string, star bool) (eventstore.Bound, bool) {
	switch {
	case s == "*" && star:
		return eventstore.Bound{}, true
	case strings.HasPrefix(s, "timestamp="):
		t, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(s, "timestamp="))
		if err != nil {
			return eventstore.Bound{}, false
		}
		return eventstore.Bound{Time: t}, true
	case strings.HasPrefix(s, "msgid="):
		id := strings.TrimPrefix(s, "msgid=")
		if id == "" || len(id) > 64 {
			return eventstore.Bound{}, false
		}
		return eventstore.Bound{MsgID: id}, true
	}
	return eventstore.Bound{}, false
}

// historyVenue maps a CHATHISTORY target to a venue the client may read: a channel it is in, or
// the DM venue between its DID and the target's, or the target guest's connection (guestParty).
// For a nick in use, peer is that nick as its holder spells it (the target of the lines the
// client sent there), else the target as given.
func (c *client) historyVenue(sub, target string, fail func(code, text string, ctx ...string)) (venue, peer string, ok bool) {
	peer = target
	if c.s.history == nil {
		fail("MESSAGE_ERROR", "History is unavailable", sub, target)
		return "", "", false
	}
	if strings.HasPrefix(target, "#") || strings.HasPrefix(target, "&") {
		name := fsm.Fold(target)
		var exists, member bool
		c.s.state.Read(func(st *fsm.State) {
			if ch, ok := st.Channel(name); ok {
				exists, member = true, ch.IsMember(c.id)
			}
		})
		if !exists {
			fail("INVALID_TARGET", "No such channel", sub, target)
			return "", "", false
		}
		if !member {
			fail("INVALID_TARGET", "You are not in that channel", sub, target)
			return "", "", false
		}
		return name, name, true
	}
	me := c.currentDID()
	if me == "" {
		fail("ACCOUNT_REQUIRED", "Direct message history needs an authenticated session", sub, target)
		return "", "", false
	}
	other := ""
	if strings.HasPrefix(target, "did:") {
		other = target
	} else {
		c.s.state.Read(func(st *fsm.State) {
			if se, ok := st.SessionByNick(target); ok {
				other, peer = se.DID, se.Nick
				if other == "" {
					other = guestParty(se.ID)
				}
			} else if owner := st.NickOwner(fsm.Fold(target)); owner != "" {
				other = owner
			}
		})
	}
	if other == "" {
		fail("INVALID_TARGET", "No such user", sub, target)
		return "", "", false
	}
	return chat.DMVenue(me, other), peer, true
}

// sendHistoryBatch replays stored messages (and, for draft/event-playback clients, channel
// events), in a chathistory batch when the client has batch.
func (c *client) sendHistoryBatch(rb *respBuf, target string, items []histItem) {
	c.sendHistoryBatchTo(rb, target, target, items)
}

// sendHistoryBatchTo is sendHistoryBatch for a batch about target whose direct messages from the
// client are addressed to peer.
func (c *client) sendHistoryBatchTo(rb *respBuf, target, peer string, items []histItem) {
	caps := c.capBits()
	batchID := ""
	if caps&capBatch != 0 {
		batchID = c.s.nextBatchID()
		rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "BATCH", Params: []string{"+" + batchID, "chathistory", target}})
	}
	me := c.currentDID()
	for _, it := range items {
		if it.ev != nil {
			if out := c.eventOut(it.ev, batchID); out != nil {
				rb.addOut(out, caps)
			}
			continue
		}
		hm := it.msg
		if hm.Command == "TAGMSG" && caps&capMessageTags == 0 {
			continue // a kept TAGMSG is nothing without its tags
		}
		param := hm.Venue
		if strings.HasPrefix(hm.Venue, "dm:") {
			param = c.nick
			if hm.SenderDID == me {
				param = peer
			}
		}
		out := outMsg{
			msg:        ircmsg.Message{Source: hm.Sender, Command: hm.Command, Params: []string{param}},
			clientTags: hm.Tags, time: serverTime(hm.Time), msgid: hm.MsgID, account: hm.SenderDID, batch: batchID,
		}
		if hm.Command != "TAGMSG" {
			out.msg.Params = append(out.msg.Params, hm.Text)
			out.msg.ForceTrailing = true
		}
		rb.addOut(&out, caps)
	}
	if batchID != "" {
		rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "BATCH", Params: []string{"-" + batchID}})
	}
}

// replayLatest sends a channel's most recent messages (and events, to draft/event-playback
// clients) after a JOIN.
func (c *client) replayLatest(rb *respBuf, venue string, n int) {
	ctx, cancel := context.WithTimeout(c.s.ctx, 10*time.Second)
	defer cancel()
	if c.wantsPlayback(venue) {
		items, err := c.playbackHistory(ctx, "LATEST", venue, eventstore.Bound{}, eventstore.Bound{}, n)
		if err != nil {
			c.s.log.Warn("join replay", "venue", venue, "err", err)
			return
		}
		if len(items) > 0 {
			c.sendHistoryBatch(rb, venue, items)
		}
		return
	}
	msgs, err := c.s.history.Latest(ctx, venue, eventstore.Bound{}, n)
	if err != nil {
		c.s.log.Warn("join replay", "venue", venue, "err", err)
		return
	}
	withReactions(ctx, c.s.history, msgs)
	if len(msgs) == 0 {
		return
	}
	c.sendHistoryBatch(rb, venue, messageItems(msgs))
}

// afterArrival answers AFTER msgid=<id>: what a client that read that message may not have read,
// in the order this node stored it (eventstore.Store.ResumeAfter). In a cluster a message can
// arrive after a newer one (it was sent on another node moments before a restart or a
// partition), and a message stored from a peer reaches this node's readers some time after its
// commit, so it can be delivered after a local message stored later: ordering by time, or
// starting right after the msgid's own row, would hide such a message from a client that
// catches up from the last msgid it read. The page starts at the oldest message that had not yet
// been delivered here when that msgid was stored.
func afterArrival(ctx context.Context, h History, venue, msgid string, limit int) ([]eventstore.Message, error) {
	return h.ResumeAfter(ctx, venue, msgid, limit)
}

// historyView is the history a client reads: for a draft/event-playback client (with batch), the
// view that holds the TAGMSGs kept in history (eventstore.Playback) as well as the messages.
func (c *client) historyView() History {
	if c.s.events != nil && c.has(capEventPlayback) && c.has(capBatch) {
		return c.s.events
	}
	return c.s.history
}
