package irc

import (
	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// draft/channel-rename: RENAME <channel> <new name> [reason], channel operators only, applied
// through the replicated state (raft/fsm/rename.go), so the channel is renamed on every node at
// the same point of the log. Members with the capability get RENAME; the others see themselves
// PART the old name and JOIN the new one, with its topic and names. The channel's history stored
// under the former name stays there: history of the new name starts at the rename. A channel
// linked with a peer server cannot be renamed (the link is by name).
//
// Channel redirection: while the state keeps a renamed channel's former name (fsm.Redirects: a
// week, until a channel has that name again), a JOIN of the former name is answered FAIL JOIN
// CHANNEL_RENAMED <old> <new> to a client with the capability, which then joins the new name
// itself; a client without it gets 470 (ERR_LINKCHANNEL) and is joined to the new name at once,
// with the key it gave. Redirection is for the clients that were not present at the rename (the
// spec's words): a member of the renamed channel saw it, so its JOIN of the former name is an
// ordinary JOIN of that name, which makes a new channel and ends the redirection.

const channelRenameCap = "draft/channel-rename"

func handleRENAME(c *client, m ircmsg.Message, rb *respBuf) {
	oldRaw, newRaw, reason := m.Param(0), m.Param(1), m.Param(2)
	old, ok := c.checkChannelName(rb, oldRaw)
	if !ok {
		return
	}
	if len(newRaw) > fsm.MaxChannelLen || !validChannel(newRaw) {
		rb.add(c.failMsg("RENAME", "CANNOT_RENAME", "Invalid channel name", oldRaw, newRaw))
		return
	}
	if len(reason) > fsm.MaxTopicLen {
		reason = truncate(reason, fsm.MaxTopicLen)
	}
	newName := fsm.Fold(newRaw)
	if c.s.links.Linked(old) {
		rb.add(c.failMsg("RENAME", "CANNOT_RENAME", "A channel linked with another server cannot be renamed", oldRaw, newRaw))
		return
	}
	res, err := c.propose(fsm.RenameChannel{Session: c.id, Channel: old, NewName: newName, Reason: reason})
	switch {
	case err != nil:
		rb.add(c.failMsg("RENAME", "TEMPORARILY_UNAVAILABLE", "Try again", oldRaw, newRaw))
	case res.Code == fsm.OK: // everyone, this client included, hears it as the rename renders
	case res.Code == fsm.NoChange: // the same name, in another case: channel names are folded
		out := ircmsg.Message{Source: c.hostmask(), Command: "RENAME", Params: []string{old, newName, reason}, ForceTrailing: true}
		if !c.has(capChannelRename) {
			return
		}
		rb.add(out)
	case res.Code == fsm.ErrChannelNameInUse:
		rb.add(c.failMsg("RENAME", "CHANNEL_NAME_IN_USE", "The channel name is already taken", oldRaw, newRaw))
	case res.Code == fsm.ErrCannotRename:
		rb.add(c.failMsg("RENAME", "CANNOT_RENAME", "The channel cannot be renamed (another prefix, or users of another server in it)", oldRaw, newRaw))
	default:
		c.codeReply(rb, res.Code, old, "")
	}
}

// renderRename moves the channel's rendered members to the new name and tells them. It runs on
// the render goroutine with s.rendered.mu held; pos is the event's position in its log entry.
func (s *Server) renderRename(e *fsm.Event, pos int) {
	s.rendered.rename(e.OldChannel, e.Channel)
	members := s.rendered.members(e.Channel)
	if actor := s.localClient(e.Actor.ID); actor != nil && !s.rendered.has(e.Channel, actor.id) {
		members = append(members[:len(members):len(members)], actor) // an operator by DID outside the channel
	}
	if len(members) == 0 {
		return
	}
	ids := make([]string, len(members))
	for i, c := range members {
		ids[i] = c.id
	}
	var masks map[string]string
	s.state.Read(func(st *fsm.State) { masks = st.SessionHostmasks(ids) })
	at := serverTimeMS(e.Time)
	rename := &outMsg{msg: ircmsg.Message{Source: e.Actor.Hostmask(), Command: "RENAME", Params: []string{e.OldChannel, e.Channel, e.Text}, ForceTrailing: true},
		time: at, account: e.Actor.DID, msgid: playbackID(e, pos, 0)}
	for _, c := range members {
		own := c.id == e.Actor.ID
		if c.has(capChannelRename) {
			c.deliver(rename, own)
			continue
		}
		mask := masks[c.id]
		if mask == "" {
			continue
		}
		part := ircmsg.Message{Source: mask, Command: "PART", Params: []string{e.OldChannel}}
		if e.Text != "" {
			part.Params = append(part.Params, e.Text)
		}
		c.deliver(&outMsg{msg: part, time: at}, own)
		c.deliver(&outMsg{msg: ircmsg.Message{Source: mask, Command: "JOIN", Params: []string{e.Channel}}, time: at}, own)
		tmp := &respBuf{c: c}
		c.sendTopic(tmp, e.Channel, false)
		c.sendNames(tmp, e.Channel)
		for _, m := range tmp.msgs {
			c.deliver(&outMsg{msg: m}, own)
		}
	}
}

// rename moves a channel's local members to its new name.
func (r *renderedMembers) rename(old, name string) {
	if ml := r.channels[old]; ml != nil {
		delete(r.channels, old)
		r.channels[name] = ml
	}
}

// redirectJoin answers a JOIN of a renamed channel's former name (raw as the client wrote it,
// name folded) by a client that is not in the renamed channel, and reports whether it did.
func (c *client) redirectJoin(rb *respBuf, raw, name, key string) bool {
	var to string
	var ok bool
	now := c.s.cfg.Now().UnixMilli()
	c.s.state.Read(func(st *fsm.State) {
		if to, ok = st.RenamedTo(name, now); ok {
			ch, found := st.Channel(to)
			ok = !found || !ch.IsMember(c.id)
		}
	})
	if !ok {
		return false
	}
	if c.has(capChannelRename) {
		rb.add(c.failMsg("JOIN", "CHANNEL_RENAMED", "The channel has been renamed", raw, to))
		return true
	}
	rb.add(c.numericMsg("470", raw, to, "The channel has been renamed"))
	c.joinOne(rb, to, key)
	return true
}
