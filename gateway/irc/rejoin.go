package irc

import (
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/rejoin"
)

// Rejoin at login (Config.Rejoin): when a connection logs in as an account (SASL with any
// mechanism, before or after its IRC registration, or the login of a new hosted account), the
// node proposes rejoin.Claim and joins the
// connection to the channels it answers: those the account's sessions were in when they ended
// (within Config.Rejoin, and not parted or kicked from since) and those its other connected
// sessions are in. Each is joined as a JOIN the client sent without a key: JOIN, topic, names,
// the read marker with draft/read-marker, and the channel's rules as they are now; a refused
// join is answered with its usual numeric (474, 475, 473, 471, ...). A channel the connection is
// in already is skipped, and a JOIN the client sends for a channel it was rejoined to changes
// nothing, so a client that joins its channels itself sees no difference. A cluster still
// being upgraded refuses the Claim: the login then joins nothing.

// DefaultRejoinMaxAge is the node's default for how long an account's channels are remembered.
const DefaultRejoinMaxAge = 7 * 24 * time.Hour

// rejoin joins a connection that just logged in to its account's channels.
func (c *client) rejoin(rb *respBuf) {
	if c.s.cfg.Rejoin <= 0 || c.currentDID() == "" || !c.registered.Load() {
		return
	}
	res, err := c.propose(rejoin.Claim{Session: c.id, MaxAge: c.s.cfg.Rejoin.Milliseconds()})
	if err != nil || res.Code != fsm.OK {
		if err == nil {
			c.s.log.Warn("rejoin refused", "session", c.id, "code", res.Code)
		}
		return
	}
	for _, name := range res.List {
		handleJOIN(c, ircmsg.Message{Command: "JOIN", Params: []string{name}}, rb)
	}
}
