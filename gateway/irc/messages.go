package irc

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/palaver-chat/palaver/federation/eventstore"
	"github.com/palaver-chat/palaver/federation/signing"
	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
)

const (
	maxTargets       = 4
	maxClientTagData = 4094 // IRCv3 message-tags: client-only tag bytes per message
)

func handlePRIVMSG(c *client, m ircmsg.Message, rb *respBuf) { c.message("PRIVMSG", m, rb) }
func handleNOTICE(c *client, m ircmsg.Message, rb *respBuf)  { c.message("NOTICE", m, rb) }
func handleTAGMSG(c *client, m ircmsg.Message, rb *respBuf)  { c.message("TAGMSG", m, rb) }

// clientTags keeps the client-only (+) tags of a received message; every other tag a client sends
// (account, time, msgid, batch, label) is dropped so it can never be relayed as if the server set it.
func clientTags(m ircmsg.Message) (map[string]string, bool) {
	var out map[string]string
	size := 0
	for k, v := range m.Tags {
		if !strings.HasPrefix(k, "+") && k != "freeq.at/sig" {
			continue
		}
		size += len(k) + len(v) + 2
		if out == nil {
			out = make(map[string]string, len(m.Tags))
		}
		out[k] = v
	}
	return out, size <= maxClientTagData
}

func (c *client) message(cmd string, m ircmsg.Message, rb *respBuf) {
	notice := cmd == "NOTICE"
	if cmd != "TAGMSG" && len(m.Params) < 2 {
		if !notice {
			if len(m.Params) == 0 {
				rb.add(c.numericMsg("411", "No recipient given (PRIVMSG)"))
			} else {
				rb.add(c.numericMsg("412", "No text to send"))
			}
		}
		return
	}
	if cmd != "TAGMSG" && !utf8.ValidString(m.Param(1)) {
		rb.add(c.failMsg(cmd, "INVALID_UTF8", "Message text must be valid UTF-8 (UTF8ONLY)"))
		return
	}
	tags, ok := clientTags(m)
	if !ok {
		rb.add(c.failMsg(cmd, "TAGS_TOO_LONG", "Client tags exceed 4094 bytes"))
		return
	}
	targets := strings.Split(m.Param(0), ",")
	if len(targets) > maxTargets {
		rb.add(c.numericMsg("407", m.Param(0), "Too many targets"))
		return
	}
	for _, target := range targets {
		if target == "" {
			continue
		}
		if !c.flood.allowMessage(time.Now()) {
			if cmd == "TAGMSG" {
				rb.add(c.failMsg("TAGMSG", "RATE_LIMITED", "You are sending too fast", target))
			} else if !notice {
				rb.add(c.numericMsg("404", target, "Flood protection: sending too fast"))
			}
			return
		}
		if target[0] == '#' || target[0] == '&' {
			c.channelMessage(cmd, fsm.Fold(target), m.Param(1), tags, rb)
		} else {
			c.privateMessage(cmd, target, m.Param(1), tags, rb)
		}
	}
}

// channelMessage checks the sender against the channel's modes, stores the message durably,
// then delivers it to local members and echoes it.
func (c *client) channelMessage(cmd, name, text string, tags map[string]string, rb *respBuf) {
	notice := cmd == "NOTICE"
	var refusal string
	var exists, moderator, member bool
	var recipients []*client
	c.s.state.Read(func(st *fsm.State) {
		ch := st.Channels[name]
		if ch == nil {
			return
		}
		exists = true
		se := st.Sessions[c.id]
		mem := ch.Members[c.id]
		privileged := st.IsChannelOp(ch, se) || (mem != nil && (mem.HalfOp || mem.Voice))
		moderator = st.IsChannelOp(ch, se) || (mem != nil && mem.HalfOp)
		member = mem != nil
		switch {
		case mem == nil && ch.NoExternal && !c.oper:
			refusal = "Cannot send to channel (+n)"
		case ch.Moderated && !privileged:
			refusal = "Cannot send to channel (+m)"
		case !privileged && se != nil && ch.IsBanned(se.Hostmask(), se.DID):
			refusal = "Cannot send to channel (+b)"
		case ch.Encrypted && cmd != "TAGMSG" && !strings.HasPrefix(text, "ENC"):
			refusal = "Cannot send to channel (+E: encrypted messages only)"
		}
		if refusal != "" {
			return
		}
		c.s.mu.RLock()
		for id := range ch.Members {
			if id == c.id {
				continue
			}
			if rc := c.s.clients[id]; rc != nil {
				recipients = append(recipients, rc)
			}
		}
		c.s.mu.RUnlock()
	})
	if !exists {
		if !notice {
			rb.add(c.numericMsg("403", name, "No such channel"))
		}
		return
	}
	if refusal != "" {
		if !notice {
			rb.add(c.numericMsg("404", name, refusal))
		}
		return
	}
	tags = copyTags(tags)
	now := time.Now()
	msgid, ok := c.adoptEventID(rb, cmd, tags, now)
	if !ok {
		return
	}
	replaces, deletes, ok := c.prepareMutation(rb, cmd, name, tags, moderator)
	if !ok {
		return
	}
	react, ok := c.prepareReaction(rb, cmd, name, tags)
	if !ok {
		return
	}
	if react != nil && !member {
		rb.add(c.numericMsg("442", name, "You're not on that channel"))
		return
	}
	venue, _ := signing.ChannelVenue(name)
	if !c.sign(rb, cmd, venue, msgid, text, tags) {
		return
	}
	if deletes != "" && !c.applyDelete(rb, deletes, msgid, tags) {
		return
	}
	if react != nil && !c.applyReaction(rb, react, name, msgid, tags, now) {
		return
	}
	if react != nil {
		c.federatedReaction(name, msgid, tags, now)
	}
	out := &outMsg{
		msg:        ircmsg.Message{Source: c.hostmask(), Command: cmd, Params: []string{name}},
		clientTags: tags, time: serverTime(now), account: c.currentDID(), msgid: msgid,
	}
	if cmd != "TAGMSG" {
		out.msg.Params = append(out.msg.Params, text)
		out.msg.ForceTrailing = true
		if !c.store(rb, cmd, name, text, tags, out.msgid, replaces, now) {
			return
		}
	}
	if cmd == "TAGMSG" && react == nil && deletes == "" && c.s.cfg.Relay != nil {
		// Neither a reaction nor a delete (both travel durably): an ephemeral TAGMSG (typing),
		// relayed to the other nodes, never stored.
		c.s.cfg.Relay(eventstore.Message{MsgID: msgid, Venue: name, Command: cmd, Sender: c.hostmask(),
			SenderNick: c.nick, SenderDID: c.currentDID(), Tags: tags, Time: now, Origin: c.s.cfg.NodeName})
	}
	for _, rc := range recipients {
		if cmd == "TAGMSG" && !rc.has(capMessageTags) {
			continue
		}
		rc.deliver(out, false)
	}
	if c.has(capEchoMessage) && (cmd != "TAGMSG" || c.has(capMessageTags)) {
		rb.add(out.forCaps(c.capBits()))
	}
}

// store writes a message to the event store before anyone sees it.
func (c *client) store(rb *respBuf, cmd, venue, text string, tags map[string]string, msgid, replaces string, now time.Time) bool {
	if c.s.history == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, 10*time.Second)
	defer cancel()
	msg := &eventstore.Message{
		MsgID: msgid, Venue: venue, Command: cmd, Sender: c.hostmask(), SenderNick: c.nick,
		SenderDID: c.currentDID(), Text: text, Tags: tags, Time: now, Origin: c.s.cfg.NodeName,
		ReplacesMsgID: replaces,
	}
	if err := c.s.history.Append(ctx, msg); err != nil {
		if errors.Is(err, eventstore.ErrDuplicate) {
			failCmd := cmd
			if replaces != "" {
				failCmd = "EDIT"
			}
			rb.add(c.failMsg(failCmd, "EVENTID_IN_USE", "That event id is already in use"))
			return false
		}
		c.s.log.Error("store message", "msgid", msgid, "err", err)
		rb.add(c.failMsg(cmd, "TEMPORARILY_UNAVAILABLE", "The message could not be stored; it was not delivered", venue))
		return false
	}
	if m := c.s.cfg.Metrics; m != nil {
		m.Messages.Inc()
	}
	if c.s.cfg.Publish != nil {
		c.s.cfg.Publish(*msg)
	}
	return true
}

// dmVenue is the venue of a conversation between two DIDs: dm:<a>,<b> with the DIDs sorted.
func dmVenue(a, b string) string {
	if a == "" || b == "" {
		return ""
	}
	pair := []string{a, b}
	sort.Strings(pair)
	return "dm:" + pair[0] + "," + pair[1]
}

// privateMessage delivers to a nick or to every session of a DID. Messages between two
// authenticated users are stored under their dm: venue; a message to an offline DID is stored for
// CHATHISTORY when the sender is authenticated.
func (c *client) privateMessage(cmd, target, text string, tags map[string]string, rb *respBuf) {
	notice := cmd == "NOTICE"
	type recipient struct {
		id, nick, away string
	}
	var rcpts []recipient
	var targetDID string
	c.s.state.Read(func(st *fsm.State) {
		var list []*fsm.Session
		if strings.HasPrefix(target, "did:") {
			targetDID = target
			list = st.SessionsByDID(target)
		} else if se := st.SessionByNick(target); se != nil {
			targetDID = se.DID
			if se.DID != "" {
				list = st.SessionsByDID(se.DID)
			} else {
				list = []*fsm.Session{se}
			}
		}
		for _, se := range list {
			rcpts = append(rcpts, recipient{id: se.ID, nick: se.Nick, away: se.Away})
		}
	})
	myDID := c.currentDID()
	venue := dmVenue(myDID, targetDID)
	if len(rcpts) == 0 && (venue == "" || !strings.HasPrefix(target, "did:")) {
		if !notice {
			rb.add(c.numericMsg("401", target, "No such nick/channel"))
		}
		return
	}
	tags = copyTags(tags)
	now := time.Now()
	msgid, ok := c.adoptEventID(rb, cmd, tags, now)
	if !ok {
		return
	}
	replaces, deletes, ok := c.prepareMutation(rb, cmd, venue, tags, false)
	if !ok {
		return
	}
	var sigVenue signing.Venue
	if venue != "" {
		sigVenue, _ = signing.ParseVenue(venue)
	}
	if !c.sign(rb, cmd, sigVenue, msgid, text, tags) {
		return
	}
	if deletes != "" && !c.applyDelete(rb, deletes, msgid, tags) {
		return
	}
	if venue != "" && cmd != "TAGMSG" {
		if !c.store(rb, cmd, venue, text, tags, msgid, replaces, now) {
			return
		}
	}
	for _, r := range rcpts {
		if r.id == c.id {
			continue
		}
		rc := c.s.localClient(r.id)
		if rc == nil {
			continue
		}
		if cmd == "TAGMSG" && !rc.has(capMessageTags) {
			continue
		}
		out := &outMsg{
			msg:        ircmsg.Message{Source: c.hostmask(), Command: cmd, Params: []string{r.nick}},
			clientTags: tags, time: serverTime(now), account: myDID, msgid: msgid,
		}
		if cmd != "TAGMSG" {
			out.msg.Params = append(out.msg.Params, text)
			out.msg.ForceTrailing = true
		}
		rc.deliver(out, false)
	}
	if cmd == "PRIVMSG" && len(rcpts) > 0 && rcpts[0].away != "" {
		rb.add(c.numericMsg("301", rcpts[0].nick, rcpts[0].away))
	}
	if c.has(capEchoMessage) && (cmd != "TAGMSG" || c.has(capMessageTags)) {
		echo := &outMsg{
			msg:        ircmsg.Message{Source: c.hostmask(), Command: cmd, Params: []string{target}},
			clientTags: tags, time: serverTime(now), account: myDID, msgid: msgid,
		}
		if cmd != "TAGMSG" {
			echo.msg.Params = append(echo.msg.Params, text)
			echo.msg.ForceTrailing = true
		}
		rb.add(echo.forCaps(c.capBits()))
	}
}

func copyTags(t map[string]string) map[string]string {
	if t == nil {
		return map[string]string{}
	}
	out := make(map[string]string, len(t))
	for k, v := range t {
		out[k] = v
	}
	return out
}
