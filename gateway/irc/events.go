package irc

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Observe renders replicated state changes for the sessions connected to this node. The node
// calls it for each applied command, in log order, from one goroutine (its subscription to the
// Applied stream, off Raft's apply path). The audience of an event is the local members of its channel as of that
// event (see renderedMembers), not as of the state now, which may already be further on.
func (s *Server) Observe(events []fsm.Event) {
	s.rendered.mu.Lock()
	defer s.rendered.mu.Unlock()
	for i := range events { // one entry's events: i is each one's position in it (playbackID)
		s.render(&events[i], i)
		s.renderConf(&events[i], i)
	}
}

// Resync rebuilds the local channel members from the state after a snapshot restore, whose
// entries' events are never observed.
func (s *Server) Resync() {
	s.rendered.mu.Lock()
	defer s.rendered.mu.Unlock()
	s.mu.RLock()
	clients := make(map[string]*client, len(s.clients))
	for id, c := range s.clients {
		clients[id] = c
	}
	s.mu.RUnlock()
	s.rendered.channels = nil
	s.state.Read(func(st *fsm.State) {
		for id, c := range clients {
			if se, ok := st.Session(id); ok {
				for name := range se.Channels() {
					s.rendered.add(name, c)
				}
			}
		}
	})
}

// channelsAudience lists the local members of the given channels (as rendered), plus the local
// sessions extra, once each. For one channel and no extra it is the channel's own list: valid
// until the next change to the rendered members, and not to be modified.
func (s *Server) channelsAudience(channels []string, extra ...string) []*client {
	if len(channels) == 1 && len(extra) == 0 {
		return s.rendered.members(channels[0])
	}
	seen := map[*client]bool{}
	var out []*client
	add := func(c *client) {
		if c != nil && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	for _, id := range extra {
		add(s.localClient(id))
	}
	for _, name := range channels {
		for _, c := range s.rendered.members(name) {
			add(c)
		}
	}
	return out
}

// sendChannel delivers o to the local members of a channel and to the local sessions extra that
// are not members (a kicker, a target), to those with want (0: everyone). The actor's copy is
// marked as its own.
func (s *Server) sendChannel(o *outMsg, want capBits, actorID, channel string, extra ...string) {
	for _, c := range s.rendered.members(channel) {
		if want == 0 || c.has(want) {
			c.deliver(o, c.id == actorID)
		}
	}
	for i, id := range extra {
		if id == "" || s.rendered.has(channel, id) || slices.Contains(extra[:i], id) {
			continue
		}
		if c := s.localClient(id); c != nil && (want == 0 || c.has(want)) {
			c.deliver(o, c.id == actorID)
		}
	}
}

// sendTo delivers o to every client of list with want (0: everyone); the actor's copy is its own.
func sendTo(list []*client, o *outMsg, want capBits, actorID string) {
	for _, c := range list {
		if want == 0 || c.has(want) {
			c.deliver(o, c.id == actorID)
		}
	}
}

// render delivers one event, at position pos of its log entry. s.rendered.mu is held.
func (s *Server) render(e *fsm.Event, pos int) {
	src := e.Actor.Hostmask()
	msg := func(command string, params ...string) *outMsg {
		return &outMsg{msg: ircmsg.Message{Source: src, Command: command, Params: params}, time: serverTimeMS(e.Time), account: e.Actor.DID}
	}
	// The lines event playback keeps carry the msgid they are kept under (playback.go).
	line := func(command string, params ...string) *outMsg {
		o := msg(command, params...)
		o.msgid = playbackID(e, pos, 0)
		return o
	}
	switch e.Kind {
	case fsm.EvJoin:
		s.renderJoin(e, pos, msg)
	case fsm.EvPart:
		params := []string{e.Channel}
		if e.Text != "" {
			params = append(params, e.Text)
		}
		s.sendChannel(line("PART", params...), 0, e.Actor.ID, e.Channel, e.Actor.ID)
		s.rendered.remove(e.Channel, e.Actor.ID)
	case fsm.EvKick:
		s.sendChannel(line("KICK", e.Channel, e.Target.Nick, e.Text), 0, e.Actor.ID, e.Channel, e.Target.ID, e.Actor.ID)
		s.rendered.remove(e.Channel, e.Target.ID)
	case fsm.EvQuit:
		sendTo(s.channelsAudience(e.Channels), line("QUIT", e.Text), 0, e.Actor.ID)
		for _, name := range e.Channels {
			s.rendered.remove(name, e.Actor.ID)
		}
		s.whowas.record(e.Actor, time.UnixMilli(e.Time))
		if strings.HasPrefix(e.Text, killPrefix) {
			s.closeKilled(e.Actor.ID, e.Text)
		}
	case fsm.EvReadMarker:
		s.renderReadMarker(e)
	case fsm.EvSetname:
		out := msg("SETNAME", e.Text)
		out.msg.ForceTrailing = true
		sendTo(s.channelsAudience(e.Channels, e.Actor.ID), out, capSetname, e.Actor.ID)
	case fsm.EvNick:
		old := e.Actor
		old.Nick = e.OldNick
		s.whowas.record(old, time.UnixMilli(e.Time))
		src = old.Hostmask()
		sendTo(s.channelsAudience(e.Channels, e.Actor.ID), line("NICK", e.Actor.Nick), 0, e.Actor.ID)
	case fsm.EvAccount:
		sendTo(s.channelsAudience(e.Channels), msg("ACCOUNT", e.Actor.DID), capAccountNotify, e.Actor.ID)
	case fsm.EvAway:
		params := []string{}
		if e.Text != "" {
			params = append(params, e.Text)
		}
		out := msg("AWAY", params...)
		for _, c := range s.channelsAudience(e.Channels) {
			if c.id != e.Actor.ID && c.has(capAwayNotify) {
				c.deliver(out, false)
			}
		}
	case fsm.EvTopic:
		t := line("TOPIC", e.Channel, e.Text)
		t.msg.ForceTrailing = true
		s.sendChannel(t, 0, e.Actor.ID, e.Channel)
	case fsm.EvMode:
		s.sendChannel(line("MODE", append([]string{e.Channel}, modeParams(e.Modes)...)...), 0, e.Actor.ID, e.Channel)
	case fsm.EvInvite:
		if c := s.localClient(e.Target.ID); c != nil {
			c.deliver(msg("INVITE", e.Target.Nick, e.Channel), false)
		}
	case fsm.EvPin, fsm.EvUnpin:
		action, tag := "pinned", "+freeq.at/pin"
		if e.Kind == fsm.EvUnpin {
			action, tag = "unpinned", "+freeq.at/unpin"
		}
		out := msg("NOTICE", e.Channel, "\x01ACTION "+action+" a message\x01")
		out.clientTags = map[string]string{tag: e.MsgID}
		s.sendChannel(out, 0, e.Actor.ID, e.Channel)
	case fsm.EvOper:
		if c := s.localClient(e.Actor.ID); c != nil {
			c.deliver(&outMsg{msg: ircmsg.Message{Source: s.cfg.ServerName, Command: "MODE", Params: []string{e.Actor.Nick, "+o"}}}, true)
		}
	}
}

// renderJoin announces a JOIN to the channel's local members, the joiner included (it becomes one
// here). Each message is serialized once per capability variant; the member list is the
// rendered one, so no per-event copy or set of all members is built. A joiner that was told its
// JOIN's outcome was unknown gets the topic and names after the echo (see unsureJoins).
func (s *Server) renderJoin(e *fsm.Event, pos int, msg func(string, ...string) *outMsg) {
	actor := s.localClient(e.Actor.ID)
	if actor != nil {
		s.rendered.add(e.Channel, actor)
	}
	members := s.rendered.members(e.Channel)
	plain := msg("JOIN", e.Channel)
	account := e.Actor.DID
	if account == "" {
		account = "*"
	}
	extended := msg("JOIN", e.Channel, account, e.Actor.Realname)
	extended.msg.ForceTrailing = true
	plain.msgid = playbackID(e, pos, 0)
	extended.msgid = plain.msgid
	if tags := s.joinTags(e.Channel, e.Actor.ID, e.Actor.DID); tags != nil {
		plain.clientTags, extended.clientTags = tags, tags
	}
	for _, c := range members {
		if c.has(capExtendedJoin) {
			c.deliver(extended, c == actor)
		} else {
			c.deliver(plain, c == actor)
		}
	}
	var away string
	s.state.Read(func(st *fsm.State) {
		if se, ok := st.Session(e.Actor.ID); ok {
			away = se.Away
		}
	})
	if away != "" {
		out := msg("AWAY", away)
		for _, c := range members {
			if c != actor && c.has(capAwayNotify) {
				c.deliver(out, false)
			}
		}
	}
	if params := joinModeParams(e); params != nil {
		m := &outMsg{msg: ircmsg.Message{Source: s.cfg.ServerName, Command: "MODE", Params: params}, time: serverTimeMS(e.Time), msgid: playbackID(e, pos, 1)}
		sendTo(members, m, 0, e.Actor.ID)
	}
	if actor != nil && actor.unsure.take(e.Channel) {
		actor.lateJoinReplies(e.Channel)
	}
}

// renderedMembers is, per channel, the clients of this node that are members as of the last
// rendered event. Rendering runs behind the state (off Raft's apply path), so reading the
// members from the state would announce an event to members who joined after it, and miss
// members who left after it; this view moves with the rendered events instead. mu is held for a
// whole Observe (or Resync); the member lists are only read or changed under it.
type renderedMembers struct {
	// lock tier 2: held for a whole Observe or Resync; takes the state read lock and tiers 4–9
	mu       sync.Mutex
	channels map[string]*memberList // folded channel name → local members
}

// memberList is a channel's local members in a slice (cheap to walk for every event) with each
// one's position (cheap to remove).
type memberList struct {
	list []*client
	pos  map[string]int // session id → index in list
}

func (r *renderedMembers) add(channel string, c *client) {
	if r.channels == nil {
		r.channels = map[string]*memberList{}
	}
	ml := r.channels[channel]
	if ml == nil {
		ml = &memberList{pos: map[string]int{}}
		r.channels[channel] = ml
	}
	if i, ok := ml.pos[c.id]; ok {
		ml.list[i] = c
		return
	}
	ml.pos[c.id] = len(ml.list)
	ml.list = append(ml.list, c)
}

func (r *renderedMembers) remove(channel, id string) {
	ml := r.channels[channel]
	if ml == nil {
		return
	}
	i, ok := ml.pos[id]
	if !ok {
		return
	}
	last := len(ml.list) - 1
	if i != last {
		moved := ml.list[last]
		ml.list[i] = moved
		ml.pos[moved.id] = i
	}
	ml.list[last] = nil
	ml.list = ml.list[:last]
	delete(ml.pos, id)
	if len(ml.list) == 0 {
		delete(r.channels, channel)
	}
}

func (r *renderedMembers) members(channel string) []*client {
	if ml := r.channels[channel]; ml != nil {
		return ml.list
	}
	return nil
}

func (r *renderedMembers) has(channel, id string) bool {
	ml := r.channels[channel]
	if ml == nil {
		return false
	}
	_, ok := ml.pos[id]
	return ok
}

// joinRendered reports whether a session's JOIN of a channel has been rendered here (it is a
// rendered member). It takes mu, so it waits for an Observe in progress.
func (r *renderedMembers) joinRendered(channel, id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.has(channel, id)
}

// modeParams renders applied changes as "+ob-v nick mask nick".
func modeParams(changes []fsm.ModeChange) []string {
	var letters strings.Builder
	var args []string
	sign := byte(0)
	for _, mc := range changes {
		want := byte('-')
		if mc.Add {
			want = '+'
		}
		if sign != want {
			letters.WriteByte(want)
			sign = want
		}
		letters.WriteString(mc.Mode)
		switch mc.Mode {
		case "o", "h", "v", "b", "e", "I":
			args = append(args, mc.Arg)
		case "k":
			if mc.Add {
				args = append(args, mc.Arg)
			} else {
				args = append(args, "*")
			}
		case "l":
			if mc.Add {
				args = append(args, mc.Arg)
			}
		}
	}
	return append([]string{letters.String()}, args...)
}
