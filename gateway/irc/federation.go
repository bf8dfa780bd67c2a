package irc

import (
	"errors"
	"strings"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/linkroute"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// The edge asks linked-channel routing (node/linkroute, Config.Links) where a TOPIC, MODE, PIN,
// UNPIN, KICK or INVITE of a channel linked with a peer server goes; what stays here is proposed
// through Raft as for any channel.

// actor is the client as the author of a change.
func (c *client) actor() linkroute.Actor {
	return linkroute.Actor{Session: c.id, Mask: c.hostmask(), DID: c.currentDID()}
}

// federatedTopic sends a TOPIC change of a channel whose home is a peer server to that home. It
// reports false when the channel's state is decided here (apply the change locally).
func (c *client) federatedTopic(rb *respBuf, m ircmsg.Message, channel string) bool {
	if !c.s.links.HomeElsewhere(channel) {
		return false
	}
	text := m.Param(1)
	if len(text) > fsm.MaxTopicLen {
		c.codeReply(rb, fsm.ErrTopicTooLong, m.Param(0), "")
		return true
	}
	routed, err := c.s.links.Topic(c.s.ctx, c.actor(), channel, text)
	if routed {
		c.requestOutcome(rb, "TOPIC", m.Param(0), err)
	}
	return routed
}

// requestOutcome answers the client when the peer refused a request, the client may not make it
// here, or the peer could not be reached (nothing changed); an accepted request is answered by the
// change itself when it comes back.
func (c *client) requestOutcome(rb *respBuf, command, channel string, err error) {
	var refused *linkroute.RefusedError
	switch {
	case err == nil:
	case errors.Is(err, linkroute.ErrNotOperator):
		c.codeReply(rb, fsm.ErrChanOpNeeded, channel, "")
	case errors.As(err, &refused) && refused.Why == "not-op":
		rb.add(c.numericMsg("482", channel, "You're not channel operator (the peer server refused the change)"))
	case refused != nil:
		rb.add(c.failMsg(command, "REFUSED", "The peer server refused the change: "+refused.Why, channel))
	default:
		rb.add(c.failMsg(command, "TEMPORARILY_UNAVAILABLE", "The link to the channel's home server is down; nothing was changed", channel))
	}
}

// federatedModes sends the modes of a MODE on a channel whose home is a peer that cross the link
// to that home as a request, and returns the changes that stay local to this server (o, h, v, k,
// E: each server decides its own operators).
func (c *client) federatedModes(rb *respBuf, channel string, changes []fsm.ModeChange) []fsm.ModeChange {
	local, err := c.s.links.Modes(c.s.ctx, c.actor(), channel, changes)
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
// It reports false when the channel's state is decided here.
func (c *client) federatedPin(rb *respBuf, verb, channel, msgid string, add bool) bool {
	routed, err := c.s.links.Pin(c.s.ctx, c.actor(), channel, msgid, add)
	if routed {
		c.requestOutcome(rb, verb, channel, err)
	}
	return routed
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
			if ch, ok := st.Channel(name); !ok || ch.CanRead(c.id, c.currentDID()) || c.oper {
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

// federatedTarget sends a KICK or INVITE of a user of the linked peer to that peer (which applies
// it if the actor is an operator there). It reports false when nick is no such user.
func (c *client) federatedTarget(rb *respBuf, kind linkroute.TargetKind, verb, channel, nick, reason string) bool {
	user, routed, err := c.s.links.Target(c.s.ctx, c.actor(), kind, channel, nick, reason)
	if !routed {
		return false
	}
	c.requestOutcome(rb, verb, channel, err)
	if err == nil && kind == linkroute.Invite {
		rb.add(c.numericMsg("341", user, channel))
	}
	return true
}
