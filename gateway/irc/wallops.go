package irc

import (
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/limits"
	"github.com/palaver-chat/palaver/node/stream"
)

// WALLOPS <text> (RFC 2812 3.7.2, modern.ircdocs.horse): a server operator's message to every
// connected user with user mode +w, on every node of the deployment, as
// ":<nick>!<user>@<host> WALLOPS :<text>". The sender gets it too when it has +w itself.
//
// User mode +w is a preference of the connection, kept by the node holding it: only that node
// delivers to it, so nothing about it is replicated (a session's +i, which WHO on every node
// reads, is). A WALLOPS is chat, not state, so it stays out of the Raft log: the node delivers it
// to its own +w users, then publishes it on the Stored stream as an ephemeral event, which the
// exchange pushes to the other nodes of the cluster (never to federated servers) like a status
// message, best effort; each of them delivers it to its +w users (deliverStored). Nothing
// stores it, so it is in no history.

// wallopsCommand is the command of a WALLOPS as an ephemeral event.
const wallopsCommand = "WALLOPS"

// handleWALLOPS sends an operator's WALLOPS. It counts against the message flood limit.
func handleWALLOPS(c *client, m ircmsg.Message, rb *respBuf) {
	if !c.requireOper(rb) {
		return
	}
	text := m.Param(0)
	if text == "" {
		rb.add(c.numericMsg("461", "WALLOPS", "Not enough parameters"))
		return
	}
	if !c.flood.allowMessage(time.Now()) {
		rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "NOTICE", Params: []string{c.displayNick(),
			"Flood protection: you are sending messages too fast"}})
		return
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	w := eventstore.Message{MsgID: c.s.msgs.NewMsgID(now), Command: wallopsCommand, Sender: c.hostmask(),
		SenderNick: c.nick, SenderDID: c.currentDID(), Text: truncate(text, limits.TextBytes), Time: now,
		Origin: c.s.cfg.NodeName}
	c.s.deliverWallops(w, c)
	if st := c.s.cfg.Streams; st != nil {
		st.Stored.PublishEphemeral(stream.Local, w)
	}
}

// deliverWallops shows a WALLOPS to this node's users with +w; sender, when it is one of them, gets
// it within its command's replies.
func (s *Server) deliverWallops(w eventstore.Message, sender *client) {
	out := &outMsg{msg: ircmsg.Message{Source: w.Sender, Command: wallopsCommand, Params: []string{w.Text}, ForceTrailing: true},
		time: serverTime(w.Time), msgid: w.MsgID, account: w.SenderDID}
	var to []*client
	s.mu.RLock()
	for _, c := range s.clients {
		if c.wallops.Load() {
			to = append(to, c)
		}
	}
	s.mu.RUnlock()
	inline := len(to) <= inlineFanOut
	for _, c := range to {
		c.deliverLive(out, c == sender, inline)
	}
}
