package irc

import (
	"strings"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Observe renders replicated state changes for the sessions connected to this node. The state
// machine calls it after each applied command, in log order.
func (s *Server) Observe(events []fsm.Event) {
	for i := range events {
		s.render(&events[i])
	}
}

// audience is a set of local clients to send one change to, with the actor marked so that its
// copy goes to its labeled response when it caused the change.
type audience struct {
	s       *Server
	actorID string
	seen    map[string]bool
	list    []*client
}

func (a *audience) addID(id string) {
	if a.seen[id] {
		return
	}
	a.seen[id] = true
	if c := a.s.localClient(id); c != nil {
		a.list = append(a.list, c)
	}
}

func (a *audience) send(o *outMsg, want capBits) {
	for _, c := range a.list {
		if want != 0 && !c.has(want) {
			continue
		}
		c.deliver(o, c.id == a.actorID)
	}
}

// channelAudience collects the local members of the given channels, plus extra session ids.
func (s *Server) channelAudience(actorID string, channels []string, extra ...string) *audience {
	a := &audience{s: s, actorID: actorID, seen: map[string]bool{}}
	var ids []string
	s.state.Read(func(st *fsm.State) {
		for _, name := range channels {
			if ch := st.Channels[name]; ch != nil {
				for id := range ch.Members {
					ids = append(ids, id)
				}
			}
		}
	})
	for _, id := range extra {
		a.addID(id)
	}
	for _, id := range ids {
		a.addID(id)
	}
	return a
}

func (s *Server) render(e *fsm.Event) {
	src := e.Actor.Hostmask()
	msg := func(command string, params ...string) *outMsg {
		return &outMsg{msg: ircmsg.Message{Source: src, Command: command, Params: params}, time: serverTimeMS(e.Time), account: e.Actor.DID}
	}
	switch e.Kind {
	case fsm.EvJoin:
		aud := s.channelAudience(e.Actor.ID, []string{e.Channel}, e.Actor.ID)
		plain := msg("JOIN", e.Channel)
		account := e.Actor.DID
		if account == "" {
			account = "*"
		}
		extended := msg("JOIN", e.Channel, account, e.Actor.Realname)
		extended.msg.ForceTrailing = true
		for _, c := range aud.list {
			if c.has(capExtendedJoin) {
				c.deliver(extended, c.id == e.Actor.ID)
			} else {
				c.deliver(plain, c.id == e.Actor.ID)
			}
		}
		var away string
		s.state.Read(func(st *fsm.State) {
			if se := st.Sessions[e.Actor.ID]; se != nil {
				away = se.Away
			}
		})
		if away != "" {
			out := msg("AWAY", away)
			for _, c := range aud.list {
				if c.id != e.Actor.ID && c.has(capAwayNotify) {
					c.deliver(out, false)
				}
			}
		}
		if !e.Created && (e.Member.Op || e.Member.Voice) {
			modes, args := "+", []string{}
			if e.Member.Op {
				modes += "o"
				args = append(args, e.Actor.Nick)
			}
			if e.Member.Voice {
				modes += "v"
				args = append(args, e.Actor.Nick)
			}
			m := &outMsg{msg: ircmsg.Message{Source: s.cfg.ServerName, Command: "MODE", Params: append([]string{e.Channel, modes}, args...)}, time: serverTimeMS(e.Time)}
			aud.send(m, 0)
		}
	case fsm.EvPart:
		aud := s.channelAudience(e.Actor.ID, []string{e.Channel}, e.Actor.ID)
		params := []string{e.Channel}
		if e.Text != "" {
			params = append(params, e.Text)
		}
		aud.send(msg("PART", params...), 0)
	case fsm.EvKick:
		aud := s.channelAudience(e.Actor.ID, []string{e.Channel}, e.Target.ID, e.Actor.ID)
		aud.send(msg("KICK", e.Channel, e.Target.Nick, e.Text), 0)
	case fsm.EvQuit:
		aud := s.channelAudience(e.Actor.ID, e.Channels)
		delete(aud.seen, e.Actor.ID)
		aud.send(msg("QUIT", e.Text), 0)
	case fsm.EvNick:
		old := e.Actor
		old.Nick = e.OldNick
		src = old.Hostmask()
		aud := s.channelAudience(e.Actor.ID, e.Channels, e.Actor.ID)
		aud.send(msg("NICK", e.Actor.Nick), 0)
	case fsm.EvAccount:
		aud := s.channelAudience(e.Actor.ID, e.Channels)
		aud.send(msg("ACCOUNT", e.Actor.DID), capAccountNotify)
	case fsm.EvAway:
		aud := s.channelAudience(e.Actor.ID, e.Channels)
		delete(aud.seen, e.Actor.ID)
		params := []string{}
		if e.Text != "" {
			params = append(params, e.Text)
		}
		out := msg("AWAY", params...)
		for _, c := range aud.list {
			if c.id != e.Actor.ID && c.has(capAwayNotify) {
				c.deliver(out, false)
			}
		}
	case fsm.EvTopic:
		aud := s.channelAudience(e.Actor.ID, []string{e.Channel})
		t := msg("TOPIC", e.Channel, e.Text)
		t.msg.ForceTrailing = true
		aud.send(t, 0)
	case fsm.EvMode:
		aud := s.channelAudience(e.Actor.ID, []string{e.Channel})
		aud.send(msg("MODE", append([]string{e.Channel}, modeParams(e.Modes)...)...), 0)
	case fsm.EvInvite:
		if c := s.localClient(e.Target.ID); c != nil {
			c.deliver(msg("INVITE", e.Target.Nick, e.Channel), false)
		}
	case fsm.EvPin, fsm.EvUnpin:
		aud := s.channelAudience(e.Actor.ID, []string{e.Channel})
		action, tag := "pinned", "+freeq.at/pin"
		if e.Kind == fsm.EvUnpin {
			action, tag = "unpinned", "+freeq.at/unpin"
		}
		out := msg("NOTICE", e.Channel, "\x01ACTION "+action+" a message\x01")
		out.clientTags = map[string]string{tag: e.MsgID}
		aud.send(out, 0)
	case fsm.EvOper:
		if c := s.localClient(e.Actor.ID); c != nil {
			c.deliver(&outMsg{msg: ircmsg.Message{Source: s.cfg.ServerName, Command: "MODE", Params: []string{e.Actor.Nick, "+o"}}}, true)
		}
	}
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
		case "o", "h", "v", "b", "I":
			args = append(args, mc.Arg)
		case "k":
			if mc.Add {
				args = append(args, mc.Arg)
			} else {
				args = append(args, "*")
			}
		}
	}
	return append([]string{letters.String()}, args...)
}
