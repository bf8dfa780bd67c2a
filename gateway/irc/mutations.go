package irc

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// PIN and UNPIN refer to stored messages: a reference is resolved to the root message of the
// channel. (Edits and deletes are the chat service's: node/chat.)

// resolveRoot finds the root of a referenced message in venue. It answers the FAIL itself and
// reports false when the reference cannot be used.
func (c *client) resolveRoot(rb *respBuf, failCmd, venue, msgid string) (eventstore.Message, bool) {
	if c.s.history == nil {
		rb.add(c.failMsg(failCmd, "MESSAGE_NOT_FOUND", "Original message not found", msgid))
		return eventstore.Message{}, false
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, 10*time.Second)
	defer cancel()
	root, err := c.s.history.Root(ctx, msgid)
	if errors.Is(err, eventstore.ErrNotFound) || (err == nil && root.Venue != venue) {
		rb.add(c.failMsg(failCmd, "MESSAGE_NOT_FOUND", "Original message not found", msgid))
		return eventstore.Message{}, false
	}
	if err != nil {
		c.s.log.Error("resolve message", "msgid", msgid, "err", err)
		rb.add(c.failMsg(failCmd, "TEMPORARILY_UNAVAILABLE", "History is unavailable", msgid))
		return eventstore.Message{}, false
	}
	return root, true
}

func handlePIN(c *client, m ircmsg.Message, rb *respBuf)   { c.pin(m, rb, true) }
func handleUNPIN(c *client, m ircmsg.Message, rb *respBuf) { c.pin(m, rb, false) }

func (c *client) pin(m ircmsg.Message, rb *respBuf, add bool) {
	verb := "PIN"
	if !add {
		verb = "UNPIN"
	}
	name := fsm.Fold(m.Param(0))
	msgid := m.Param(1)
	var cmd fsm.Command
	if add {
		root, ok := c.resolveRoot(rb, verb, name, msgid)
		if !ok {
			return
		}
		cmd = fsm.Pin{Session: c.id, Channel: name, MsgID: root.MsgID}
		msgid = root.MsgID
	} else {
		if root, ok := c.lookupRoot(name, msgid); ok {
			msgid = root
		}
		cmd = fsm.Unpin{Session: c.id, Channel: name, MsgID: msgid}
	}
	if c.federatedPin(rb, verb, name, msgid, add) {
		return
	}
	res, err := c.propose(cmd)
	if err != nil {
		rb.add(c.failMsg(verb, "TEMPORARILY_UNAVAILABLE", "Try again", name))
		return
	}
	notice := func(text string) {
		rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "NOTICE", Params: []string{c.nick, text}})
	}
	switch res.Code {
	case fsm.OK:
	case fsm.ErrAlreadyPinned:
		notice("Message " + msgid + " is already pinned in " + name)
	case fsm.ErrNotPinned:
		notice("Message " + msgid + " is not pinned in " + name)
	default:
		c.codeReply(rb, res.Code, m.Param(0), "")
	}
}

// lookupRoot resolves a msgid to its root without answering errors.
func (c *client) lookupRoot(venue, msgid string) (string, bool) {
	if c.s.history == nil {
		return "", false
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, 10*time.Second)
	defer cancel()
	root, err := c.s.history.Root(ctx, msgid)
	if err != nil || root.Venue != venue {
		return "", false
	}
	return root.MsgID, true
}

// handlePINS lists a channel's pins, newest first, to a member (or a reader of a restricted
// channel with rights to it).
func handlePINS(c *client, m ircmsg.Message, rb *respBuf) {
	name := fsm.Fold(m.Param(0))
	var pins []fsm.PinEntry
	var exists, allowed bool
	c.s.state.Read(func(st *fsm.State) {
		ch, ok := st.Channel(name)
		if !ok {
			return
		}
		exists = true
		did := c.currentDID()
		allowed = ch.IsMember(c.id) || c.oper || (did != "" && (did == ch.FounderDID() || ch.IsDIDOp(did)))
		if allowed {
			pins = ch.Pins()
		}
	})
	if !exists {
		rb.add(c.numericMsg("403", m.Param(0), "No such channel"))
		return
	}
	if !allowed {
		rb.add(c.numericMsg("442", m.Param(0), "You're not on that channel"))
		return
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, 10*time.Second)
	defer cancel()
	for _, p := range pins {
		from, text := "unknown", "[message not found]"
		if c.s.history != nil {
			if cur, err := c.s.history.Current(ctx, p.MsgID); err == nil && c.s.shownIn(name, cur) {
				from, text = cur.SenderNick, cur.Text
			}
		}
		msg := ircmsg.Message{Source: c.s.cfg.ServerName, Command: "NOTICE", Params: []string{c.nick,
			"[" + name + "] " + p.MsgID + " pinned by " + p.PinnedBy + " at " + time.UnixMilli(p.PinnedAt).UTC().Format(time.RFC3339) + ": <" + from + "> " + text}}
		if c.has(capMessageTags) {
			msg.SetTag("+freeq.at/pin", p.MsgID)
		}
		rb.add(msg)
	}
	rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "NOTICE", Params: []string{c.nick, "[" + name + "] " + strconv.Itoa(len(pins)) + " pinned message(s)"}})
}
