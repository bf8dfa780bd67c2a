package irc

import "github.com/palaver-chat/palaver/raft/fsm"

// inBotMode reports whether the client's session is in bot mode (+B): its messages carry the
// bot tag (IRCv3 bot-mode) to message-tags clients.
func (c *client) inBotMode() bool {
	var bot bool
	c.s.state.Read(func(st *fsm.State) { bot = st.SessionIsBot(c.id) })
	return bot
}
