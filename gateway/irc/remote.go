package irc

import (
	"strings"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// DeliverRemote hands a message another node stored (and this node has just stored too) to the
// local sessions it concerns: the local members of its channel, or the local sessions of the
// recipient of a direct message. The message is rendered as it was sent, with its original msgid,
// time, account and tags (including the origin's signature).
//
// Every local member at the time of delivery gets it, also one whose JOIN is newer than the
// message's time (a node that restarted pulls what it missed while its users are already
// rejoining). That is deliberate: the message was not stored here before, so no history answer
// this node gave, nor the JOIN replay, held it, and live delivery is the only way such a member
// sees it; it carries its server-time and msgid, so clients order it and drop a copy they read
// from history elsewhere. Suppressing it by comparing m.Time with the member's JoinedAt would also
// turn clock skew between nodes into lost messages.
func (s *Server) DeliverRemote(m eventstore.Message) {
	base := outMsg{
		msg:        ircmsg.Message{Source: m.Sender, Command: m.Command, Params: []string{m.Venue}},
		clientTags: m.Tags, time: serverTime(m.Time), msgid: m.MsgID, account: m.SenderDID,
	}
	if m.Command != "TAGMSG" {
		base.msg.Params = append(base.msg.Params, m.Text)
		base.msg.ForceTrailing = true
	}
	if !strings.HasPrefix(m.Venue, "dm:") {
		base.msg.Params[0] = m.Status + m.Venue
		var members []*client
		if m.Status == "" {
			members = s.localMembers(m.Venue) // shared: read only
		}
		need := statusRank(m.Status)
		s.state.Read(func(st *fsm.State) {
			base.bot = st.NickIsBot(m.SenderNick, m.SenderDID)
			if m.Status == "" {
				return
			}
			for id, mem := range st.LocalMembers(m.Venue) {
				if c := s.localClient(id); c != nil && memberRank(mem) >= need {
					members = append(members, c)
				}
			}
		})
		out := &base
		inline := len(members) <= inlineFanOut
		for _, c := range members {
			if m.Command != "TAGMSG" || c.has(capMessageTags) {
				c.deliverLive(out, false, inline)
			}
		}
		return
	}
	pair := strings.SplitN(strings.TrimPrefix(m.Venue, "dm:"), ",", 2)
	if len(pair) != 2 {
		return
	}
	recipient := pair[0]
	// The sender is one party: its DID, or for a guest (no DID) the party that is no DID.
	if recipient == m.SenderDID || (m.SenderDID == "" && strings.HasPrefix(recipient, guestPrefix)) {
		recipient = pair[1]
	}
	if recipient == m.SenderDID {
		return
	}
	type target struct{ id, nick string }
	var targets []target
	s.state.Read(func(st *fsm.State) {
		base.bot = st.NickIsBot(m.SenderNick, m.SenderDID)
		if id, guest := strings.CutPrefix(recipient, guestPrefix); guest {
			if se, ok := st.Session(id); ok && se.DID == "" {
				targets = append(targets, target{se.ID, se.Nick})
			}
			return
		}
		for _, se := range st.SessionsByDID(recipient) {
			targets = append(targets, target{se.ID, se.Nick})
		}
	})
	for _, t := range targets {
		if c := s.localClient(t.id); c != nil && (m.Command != "TAGMSG" || c.has(capMessageTags)) {
			out := base
			out.msg.Params = append([]string{t.nick}, base.msg.Params[1:]...)
			c.deliverLive(&out, false, len(targets) <= inlineFanOut)
		}
	}
}

// DeliverDeletion tells the local members of a channel that a message was deleted on another node:
// a TAGMSG with +draft/delete from whoever deleted it, to message-tags clients.
func (s *Server) DeliverDeletion(d eventstore.Deletion) {
	if strings.HasPrefix(d.Venue, "dm:") {
		return // DM deletes reach the participants through history; no live line is rendered
	}
	tags, msgid := d.Tags, d.Tags[chat.DeletionEventIDTag]
	if msgid == "" {
		msgid = s.msgs.NewMsgID(time.Now())
	} else {
		tags = chat.CopyTags(d.Tags)
		delete(tags, chat.DeletionEventIDTag)
	}
	out := &outMsg{
		msg:        ircmsg.Message{Source: d.Sender, Command: "TAGMSG", Params: []string{d.Venue}},
		clientTags: tags, time: serverTime(d.At), msgid: msgid, account: d.SenderDID,
	}
	var ids []string
	s.state.Read(func(st *fsm.State) {
		for id := range st.LocalMembers(d.Venue) {
			ids = append(ids, id)
		}
	})
	for _, id := range ids {
		if c := s.localClient(id); c != nil && c.has(capMessageTags) {
			c.deliver(out, false)
		}
	}
}

// DeliverReaction shows the local members of a channel a react or unreact made on another node
// (and just applied here): the TAGMSG as it was sent, with its msgid, time, account and tags
// (+freeq.at/sig among them), to message-tags clients.
func (s *Server) DeliverReaction(r eventstore.ReactionEvent) {
	if strings.HasPrefix(r.Venue, "dm:") {
		return
	}
	s.DeliverRemote(eventstore.Message{MsgID: r.EventID, Venue: r.Venue, Command: "TAGMSG", Sender: r.Sender,
		SenderNick: r.ReactorNick, SenderDID: r.SenderDID, Tags: r.Tags, Time: r.At, Origin: r.Origin})
}
