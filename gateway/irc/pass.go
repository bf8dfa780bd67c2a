package irc

import (
	"crypto/subtle"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// The connection password (RFC 2812 3.1.1, modern IRC): with Config.Password set, a client must
// send PASS <password> before its registration completes; without it, or with another password,
// registration ends with 464 (ERR_PASSWDMISMATCH) and ERROR, and the connection is closed. PASS
// after registration is 462. Without Config.Password, PASS is accepted and ignored.

func handlePASS(c *client, m ircmsg.Message, rb *respBuf) {
	if c.registered.Load() {
		rb.add(c.numericMsg("462", "You may not reregister"))
		return
	}
	c.pass = m.Param(0)
}

// passwordAccepted reports whether the client may register as far as the connection password
// goes; when not, it has answered 464 and ERROR and ends the connection.
func (c *client) passwordAccepted(rb *respBuf) bool {
	want := c.s.cfg.Password
	if want == "" || subtle.ConstantTimeCompare([]byte(c.pass), []byte(want)) == 1 {
		return true
	}
	rb.add(c.numericMsg("464", "Password incorrect"))
	rb.add(ircmsg.Message{Command: "ERROR", Params: []string{"Closing link: password incorrect"}})
	c.quit, c.quitReason = true, "Bad password"
	return false
}
