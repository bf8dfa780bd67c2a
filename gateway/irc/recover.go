package irc

import (
	"runtime/debug"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// A panic while serving one connection (a command handler on the connection's line goroutine, or
// its pipeline worker storing and delivering messages) must not take the whole server down: it is
// logged with its stack, and that connection alone is closed. Its session ends as for any other
// disconnect.

// panicReason is the QUIT reason of a connection closed after a panic.
const panicReason = "Internal server error"

// recovered reports the panic value r (from recover, nil when there was none) of the goroutine
// doing what, closes the connection, and reports whether there was a panic.
func (c *client) recovered(r any, what string) bool {
	if r == nil {
		return false
	}
	c.s.log.Error("panic while serving a connection; closing it", "what", what, "session", c.id, "nick", c.nick,
		"panic", r, "stack", string(debug.Stack()))
	c.closeWith(panicReason, ircmsg.Message{Command: "ERROR", Params: []string{"Closing link: " + panicReason}}.AppendTo(nil))
	return true
}
