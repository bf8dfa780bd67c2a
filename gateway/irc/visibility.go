package irc

import (
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// shownIn reports whether a message read by msgid may be shown through channel as it is now: it
// was written there, and in the channel's current incarnation or while the channel was public
// (fsm.Channel.MessageVisible). The history views apply the same rule themselves.
func (s *Server) shownIn(channel string, m eventstore.Message) bool {
	if m.Venue != channel {
		return false
	}
	shown := false
	s.state.Read(func(st *fsm.State) {
		ch, _ := st.Channel(channel)
		shown = ch.MessageVisible(m.Incarnation, m.Public)
	})
	return shown
}
