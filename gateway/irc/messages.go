package irc

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/limits"
	"github.com/palaver-chat/palaver/raft/fsm"
)

const (
	maxTargets       = 4
	maxClientTagData = limits.ClientTagBytes // IRCv3 message-tags: client-only tag bytes per message
)

func handlePRIVMSG(c *client, m ircmsg.Message, rb *respBuf) { c.message("PRIVMSG", m, rb) }
func handleNOTICE(c *client, m ircmsg.Message, rb *respBuf)  { c.message("NOTICE", m, rb) }
func handleTAGMSG(c *client, m ircmsg.Message, rb *respBuf)  { c.message("TAGMSG", m, rb) }

// clientTags keeps the client-only (+) tags of a received message; every other tag a client sends
// (account, time, msgid, batch, label), and the client-only tags only a server sets
// (serverOwnedTags), are dropped so they can never be relayed as if the server set them.
func clientTags(m ircmsg.Message) map[string]string {
	var out map[string]string
	for k, v := range m.Tags {
		if (!strings.HasPrefix(k, "+") && k != "freeq.at/sig") || serverOwnedTags[k] {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(m.Tags))
		}
		out[k] = v
	}
	return out
}

func (c *client) message(cmd string, m ircmsg.Message, rb *respBuf) {
	c.messageWith(cmd, m, nil, rb)
}

// messageWith sends a PRIVMSG, NOTICE or TAGMSG with the server's own tags (serverOnlyTags) to
// keep with it beside the client's: a multiline message's composition, a redaction's reason.
func (c *client) messageWith(cmd string, m ircmsg.Message, server map[string]string, rb *respBuf) {
	notice := cmd == "NOTICE"
	if cmd != "TAGMSG" && (len(m.Params) < 2 || m.Param(1) == "") {
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
	tags := clientTags(m) // within maxClientTagData: longer tag data was answered 417 on input
	for k, v := range server {
		if v == "" {
			continue
		}
		if tags == nil {
			tags = map[string]string{}
		}
		tags[k] = v
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
		if cmd == "TAGMSG" {
			if !c.flood.allowTagmsg(time.Now()) {
				rb.add(c.failMsg("TAGMSG", "RATE_LIMITED", "You are sending too fast", target))
				return
			}
		} else if !c.flood.allowMessage(time.Now()) {
			if !notice {
				rb.add(c.numericMsg("404", target, "Flood protection: sending too fast"))
			}
			return
		}
		var step *sendStep
		if status, name := splitStatus(target); status != "" {
			step = c.channelMessage(cmd, status, fsm.Fold(name), m.Param(1), tags, rb)
		} else if target[0] == '#' || target[0] == '&' {
			step = c.channelMessage(cmd, "", fsm.Fold(target), m.Param(1), tags, rb)
		} else {
			step = c.privateMessage(cmd, target, m.Param(1), tags, rb)
		}
		if step == nil {
			continue
		}
		if rb.pipelined {
			rb.after = step // one target: stored and delivered by the connection's pipeline
			return
		}
		c.completeNow(rb, step)
	}
}

// draft is what the chat service needs to know of this client's event.
func (c *client) draft(cmd, venue, status, text string, tags map[string]string) chat.Draft {
	c.sigMu.Lock()
	key, kid := c.sessionKey, c.sessionKID
	c.sigMu.Unlock()
	return chat.Draft{Sender: chat.Sender{Session: c.id, Nick: c.nick, Mask: c.hostmask(), DID: c.currentDID(), Oper: c.oper,
		SessionKey: key, SessionKID: kid}, Command: cmd, Venue: venue, Status: status, Text: text, Tags: tags}
}

// refused answers the chat service's refusal: its numeric (none to a NOTICE), its FAIL, or
// nothing for a silent one.
func (c *client) refused(rb *respBuf, cmd string, r *chat.Refusal) {
	switch {
	case r.Numeric != "":
		if cmd != "NOTICE" {
			rb.add(c.numericMsg(r.Numeric, append(append([]string(nil), r.Context...), r.Text)...))
		}
	case r.Code != "":
		rb.add(c.failMsg(r.Command, r.Code, r.Text, r.Context...))
	}
}

// channelMessage has the chat service check and sign a message to a channel (after the surfaces'
// message checks). It returns what is left to do (store the message durably, then deliver it to
// local members and echo it), or nil when the message was refused. A status ("@", "%" or "+", see
// statusmsg.go) limits it to the members with that prefix or a higher one, live only.
func (c *client) channelMessage(cmd, status, name, text string, tags map[string]string, rb *respBuf) *sendStep {
	d := c.draft(cmd, name, status, text, tags)
	d.Check = func() *chat.Refusal { return c.checkOutgoing(cmd, status, name, text, tags) }
	w, r := c.s.msgs.Prepare(c.s.ctx, d)
	if r != nil {
		c.refused(rb, cmd, r)
		return nil
	}
	ev := &w.Event
	out := &outMsg{
		msg:        ircmsg.Message{Source: ev.Sender, Command: cmd, Params: []string{status + name}},
		clientTags: ev.Tags, time: serverTime(ev.Time), account: ev.SenderDID, msgid: ev.MsgID, bot: c.inBotMode(),
	}
	if cmd != "TAGMSG" {
		out.msg.Params = append(out.msg.Params, text)
		out.msg.ForceTrailing = true
	}
	echo := func() {
		if c.has(capEchoMessage) && (cmd != "TAGMSG" || c.has(capMessageTags)) {
			rb.addOut(out, c.capBits())
		}
	}
	step := &sendStep{write: w, deliver: func() {
		// The members are read now, after the store, not when the message was checked: a member
		// whose JOIN applied in between would otherwise get it neither live nor from a history
		// request made before the message was stored.
		if status != "" {
			c.deliverToMembers(c.s.statusMembers(name, status, c.id), out)
		} else {
			c.deliverToMembers(c.s.localMembers(name), out)
		}
		echo()
	}}
	if status == "" {
		step.gather = func(fo *batchFanOut) {
			fo.add(name, out)
			echo()
		}
	}
	return step
}

// privateMessage finds the recipients of a message to a nick or to every session of a DID and
// signs it. Messages between two authenticated users are stored under their dm: venue, and so
// are those between an authenticated user and a guest, the guest named by its connection
// (guestParty); only two guests' messages are delivered live alone. A message to an offline DID
// is stored for CHATHISTORY when the sender is authenticated. It returns what is left to do
// (store, deliver, echo), or nil when the message was refused.
func (c *client) privateMessage(cmd, target, text string, tags map[string]string, rb *respBuf) *sendStep {
	notice := cmd == "NOTICE"
	type recipient struct {
		id, nick, away string
	}
	var rcpts []recipient
	var targetDID, targetGuest string // targetGuest: the guestParty of a guest target
	var remote bool                   // target is a nick of a linked server's user
	var bot bool
	c.s.state.Read(func(st *fsm.State) {
		bot = st.SessionIsBot(c.id)
		var list []fsm.Session
		if strings.HasPrefix(target, "did:") {
			targetDID = target
			list = st.SessionsByDID(target)
		} else if se, ok := st.SessionByNick(target); ok {
			targetDID = se.DID
			if se.DID != "" {
				list = st.SessionsByDID(se.DID)
			} else {
				list = []fsm.Session{se}
				targetGuest = guestParty(se.ID)
			}
		} else if rm := st.RemoteByNick(target); rm != nil && rm.DID != "" {
			targetDID = rm.DID // a user of a linked server: the DM goes to its DID's venue
			remote = true
		}
		for _, se := range list {
			rcpts = append(rcpts, recipient{id: se.ID, nick: se.Nick, away: se.Away})
		}
	})
	myDID := c.currentDID()
	venue := dmVenue(myDID, c.id, targetDID, targetGuest)
	// Only an authenticated sender may leave a message for a DID with no session here.
	if len(rcpts) == 0 && (myDID == "" || venue == "" || !(remote || strings.HasPrefix(target, "did:"))) {
		if !notice {
			rb.add(c.numericMsg("401", target, "No such nick/channel"))
		}
		return nil
	}
	w, r := c.s.msgs.Prepare(c.s.ctx, c.draft(cmd, venue, "", text, tags))
	if r != nil {
		c.refused(rb, cmd, r)
		return nil
	}
	tags, msgid, now, mask := w.Event.Tags, w.Event.MsgID, w.Event.Time, w.Event.Sender
	step := &sendStep{write: w}
	var away *ircmsg.Message
	if cmd == "PRIVMSG" && len(rcpts) > 0 && rcpts[0].away != "" {
		m := c.numericMsg("301", rcpts[0].nick, rcpts[0].away)
		away = &m
	}
	step.deliver = func() {
		if targetDID != "" {
			// Read the DID's sessions again after the store, as channelMessage reads members: a
			// session that registered in between would otherwise miss the message.
			rcpts = rcpts[:0]
			c.s.state.Read(func(st *fsm.State) {
				for _, se := range st.SessionsByDID(targetDID) {
					rcpts = append(rcpts, recipient{id: se.ID, nick: se.Nick})
				}
			})
		}
		// A message to oneself is delivered to oneself too (after the echo, unlabeled).
		toSelf := fsm.Fold(target) == fsm.Fold(c.nick)
		for _, r := range rcpts {
			if r.id == c.id && !toSelf {
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
				msg:        ircmsg.Message{Source: mask, Command: cmd, Params: []string{r.nick}},
				clientTags: tags, time: serverTime(now), account: myDID, msgid: msgid, bot: bot,
			}
			if cmd != "TAGMSG" {
				out.msg.Params = append(out.msg.Params, text)
				out.msg.ForceTrailing = true
			}
			rc.deliverLive(out, false, len(rcpts) <= inlineFanOut)
		}
		if away != nil {
			rb.add(*away)
		}
		if c.has(capEchoMessage) && (cmd != "TAGMSG" || c.has(capMessageTags)) {
			echo := &outMsg{
				msg:        ircmsg.Message{Source: mask, Command: cmd, Params: []string{target}},
				clientTags: tags, time: serverTime(now), account: myDID, msgid: msgid, bot: bot,
			}
			if cmd != "TAGMSG" {
				echo.msg.Params = append(echo.msg.Params, text)
				echo.msg.ForceTrailing = true
			}
			rb.addOut(echo, c.capBits())
		}
	}
	return step
}

// guestPrefix starts the name a guest has in a DM venue (guestParty).
const guestPrefix = "guest:"

// guestParty names a guest in the venue of its direct messages with an authenticated user:
// guest:<session id>. A guest has no DID, and its nick passes to whoever takes it next, so the
// conversation is keyed by the connection: it lasts as long as the guest's connection (a nick
// change keeps it), the user reads it by the guest's current nick, and no later holder of the
// nick, guest or account, ever shares it. Guests read no DM history (ACCOUNT_REQUIRED). Such a
// venue names no two DIDs, so its messages are not signed and not sent to linked servers.
func guestParty(sessionID string) string { return guestPrefix + sessionID }

// dmVenue is the venue of a direct message from a sender (its DID, "" for a guest, and its
// session id) to a recipient (its DID, or the guestParty of a guest recipient): the two parties
// sorted (chat.DMVenue), or "" between two guests, whose messages are delivered live only: no
// one could ever read them back.
func dmVenue(fromDID, fromSession, toDID, toGuest string) string {
	from, to := fromDID, toDID
	if from == "" {
		from = guestParty(fromSession)
	}
	if to == "" {
		to = toGuest
	}
	if fromDID == "" && toDID == "" {
		return ""
	}
	return chat.DMVenue(from, to)
}
