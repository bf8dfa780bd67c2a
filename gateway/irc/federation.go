package irc

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/federation/peering"
	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Federation is what the IRC edge asks of federation with other servers (federation/peering).
type Federation interface {
	// IsLinked reports whether a channel is linked with a peer server.
	IsLinked(channel string) bool
	// HomeElsewhere reports whether a channel's state is decided by a peer server (a linked
	// channel whose home is the peer).
	HomeElsewhere(channel string) bool
	// RequestTopic sends a topic change to the channel's home server. nil means the home accepted
	// it (the change arrives as the home's topic); an error means nothing changed, and wraps
	// peering.ErrRefusedByHome when the home refused it.
	RequestTopic(ctx context.Context, channel, setBy, setByDID, text string) error
	// RequestChange sends a mode, pin or unpin change to the channel's home server, with the
	// same outcomes as RequestTopic.
	RequestChange(ctx context.Context, change peering.Change) error
	// ActOnRemote sends a kick or invite of a user of the linked peer to that peer, with the
	// same outcomes.
	ActOnRemote(ctx context.Context, change peering.Change) error
}

// federatedTopic sends a TOPIC change of a channel whose home is a peer server to that home,
// after checking the actor against this server's own state. It reports false when the channel's
// state is decided here (apply the change locally).
func (c *client) federatedTopic(rb *respBuf, m ircmsg.Message, channel string) bool {
	if c.s.federation == nil || !c.s.federation.HomeElsewhere(channel) {
		return false
	}
	text := m.Param(1)
	if len(text) > fsm.MaxTopicLen {
		c.codeReply(rb, fsm.ErrTopicTooLong, m.Param(0), "")
		return true
	}
	allowed := false
	c.s.state.Read(func(st *fsm.State) {
		ch, se := st.Channel(channel), st.Session(c.id)
		if ch == nil || se == nil {
			return
		}
		me, _ := ch.Member(c.id)
		allowed = !ch.TopicLock || st.IsChannelOp(ch, se) || me.HalfOp
	})
	if !allowed {
		c.codeReply(rb, fsm.ErrChanOpNeeded, m.Param(0), "")
		return true
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, 10*time.Second)
	defer cancel()
	c.requestOutcome(rb, "TOPIC", m.Param(0), c.s.federation.RequestTopic(ctx, channel, c.hostmask(), c.currentDID(), text))
	return true
}

// requestOutcome answers the client when the home refused a request or could not be reached
// (nothing changed); an accepted request is answered by the change itself when it comes back.
func (c *client) requestOutcome(rb *respBuf, command, channel string, err error) {
	var refused *peering.RefusedError
	switch {
	case err == nil:
	case errors.As(err, &refused) && refused.Why == "not-op":
		rb.add(c.numericMsg("482", channel, "You're not channel operator (the peer server refused the change)"))
	case refused != nil:
		rb.add(c.failMsg(command, "REFUSED", "The peer server refused the change: "+refused.Why, channel))
	default:
		rb.add(c.failMsg(command, "TEMPORARILY_UNAVAILABLE", "The link to the channel's home server is down; nothing was changed", channel))
	}
}

// homeElsewhere reports whether a channel's state is decided by a peer server.
func (c *client) homeElsewhere(channel string) bool {
	return c.s.federation != nil && c.s.federation.HomeElsewhere(channel)
}

// isLocalOp reports whether the client is an operator of channel in this server's state.
func (c *client) isLocalOp(channel string) bool {
	op := false
	c.s.state.Read(func(st *fsm.State) {
		if ch := st.Channel(channel); ch != nil {
			op = st.IsChannelOp(ch, st.Session(c.id))
		}
	})
	return op
}

// federatedModes sends the modes of a MODE on a channel whose home is a peer (flags i, t, n, m,
// bans, invite exceptions) to that home as a request, and returns the changes that stay local to
// this server (o, h, v, k, E: each server decides its own operators).
func (c *client) federatedModes(rb *respBuf, channel string, changes []fsm.ModeChange) []fsm.ModeChange {
	var local []fsm.ModeChange
	var modes []peering.ModeChange
	for _, mc := range changes {
		if f := peering.FederatedModes([]fsm.ModeChange{mc}); len(f) > 0 {
			modes = append(modes, f...)
		} else {
			local = append(local, mc)
		}
	}
	if len(modes) == 0 {
		return local
	}
	if !c.isLocalOp(channel) {
		c.codeReply(rb, fsm.ErrChanOpNeeded, channel, "")
		return local
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, 10*time.Second)
	defer cancel()
	err := c.s.federation.RequestChange(ctx, peering.Change{Kind: peering.ChangeMode, Channel: channel,
		Actor: c.hostmask(), ActorDID: c.currentDID(), Modes: modes})
	c.requestOutcome(rb, "MODE", channel, err)
	return local
}

// didOpGrants applies the DID ops of a MODE on a linked channel that name a DID rather than a
// session here (MODE #chan +o did:...): how this server's operators trust users of the peer,
// whose changes are accepted only from operators in this server's state. It returns the rest.
func (c *client) didOpGrants(rb *respBuf, channel string, changes []fsm.ModeChange) []fsm.ModeChange {
	var grants, rest []fsm.ModeChange
	for _, mc := range changes {
		if mc.Mode == "o" && mc.Target == "" {
			grants = append(grants, mc)
		} else {
			rest = append(rest, mc)
		}
	}
	if len(grants) == 0 {
		return rest
	}
	res, err := c.propose(fsm.FederatedMode{Session: c.id, Channel: channel, Changes: grants, SetBy: c.hostmask(), SetByDID: c.currentDID()})
	switch {
	case err != nil:
		rb.add(c.failMsg("MODE", "TEMPORARILY_UNAVAILABLE", "Try again", channel))
	case res.Code != fsm.OK && res.Code != fsm.NoChange:
		c.codeReply(rb, res.Code, channel, "")
	}
	return rest
}

// federatedPin sends a PIN or UNPIN of a channel whose home is a peer to that home as a request.
func (c *client) federatedPin(rb *respBuf, verb, channel, msgid string, add bool) {
	if !c.isLocalOp(channel) {
		c.codeReply(rb, fsm.ErrChanOpNeeded, channel, "")
		return
	}
	kind := peering.ChangePin
	if !add {
		kind = peering.ChangeUnpin
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, 10*time.Second)
	defer cancel()
	err := c.s.federation.RequestChange(ctx, peering.Change{Kind: kind, Channel: channel, Actor: c.hostmask(),
		ActorDID: c.currentDID(), MsgID: msgid})
	c.requestOutcome(rb, verb, channel, err)
}

// remoteWhois answers WHOIS for a user of a peer server present in linked channels; it reports
// false when nick is not one.
func (c *client) remoteWhois(rb *respBuf, nick string) bool {
	var m fsm.RemoteMember
	var channels []string
	c.s.state.Read(func(st *fsm.State) {
		rm := st.RemoteByNick(nick)
		if rm == nil {
			return
		}
		m = *rm
		for _, name := range rm.ChannelNames() {
			if ch := st.Channel(name); ch == nil || ch.CanRead(c.id, c.currentDID()) || c.oper {
				channels = append(channels, name)
			}
		}
	})
	if m.Nick == "" {
		return false
	}
	rb.add(c.numericMsg("311", m.Nick, m.User, m.Host, "*", ""))
	if len(channels) > 0 {
		rb.add(c.numericMsg("319", m.Nick, strings.Join(channels, " ")))
	}
	rb.add(c.numericMsg("312", m.Nick, m.Host, "Remote server (federated)"))
	if m.DID != "" {
		rb.add(c.numericMsg("330", m.Nick, m.DID, "is logged in as"))
	}
	rb.add(c.numericMsg("318", m.Nick, "End of /WHOIS list"))
	return true
}

// remoteTarget finds a user of a peer server by nick: in channel (inChannel) or anywhere.
func (c *client) remoteTarget(channel, nick string, inChannel bool) (fsm.RemoteMember, bool) {
	var m fsm.RemoteMember
	c.s.state.Read(func(st *fsm.State) {
		if rm := st.RemoteByNick(nick); rm != nil && (!inChannel || rm.InChannel(channel)) {
			m = *rm
		}
	})
	return m, m.Nick != ""
}

// federatedTarget sends a KICK or INVITE of a user of the linked peer to that peer (which applies
// it if the actor is an operator there). It reports false when nick is no such user.
func (c *client) federatedTarget(rb *respBuf, kind, verb, channel, nick, reason string) bool {
	if c.s.federation == nil || !c.s.federation.IsLinked(channel) {
		return false
	}
	m, ok := c.remoteTarget(channel, nick, kind == peering.ChangeKick)
	if !ok {
		return false
	}
	if !c.isLocalOp(channel) {
		c.codeReply(rb, fsm.ErrChanOpNeeded, channel, "")
		return true
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, 10*time.Second)
	defer cancel()
	err := c.s.federation.ActOnRemote(ctx, peering.Change{Kind: kind, Channel: channel, Actor: c.hostmask(), ActorDID: c.currentDID(),
		Target: m.Nick, TargetDID: m.DID, Reason: reason})
	c.requestOutcome(rb, verb, channel, err)
	if err == nil && kind == peering.ChangeInvite {
		rb.add(c.numericMsg("341", m.Nick, channel))
	}
	return true
}
