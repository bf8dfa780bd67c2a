package irc

import (
	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// killPrefix starts the quit reason of a killed session; the node holding the killed connection
// recognises it when it renders the session's end (see closeKilled).
const killPrefix = "Killed ("

// handleKILL lets a server operator end another session, wherever it is connected: the session
// ends through Raft and the node holding its connection closes it.
func handleKILL(c *client, m ircmsg.Message, rb *respBuf) {
	if !c.requireOper(rb) {
		return
	}
	nick := m.Param(0)
	target := c.sessionIDByNick(nick)
	if target == "" {
		rb.add(c.numericMsg("401", nick, "No such nick/channel"))
		return
	}
	reason := killPrefix + c.nick + " (" + truncate(m.Param(1), 300) + "))"
	res, err := c.propose(fsm.EndSession{Session: target, Reason: reason})
	if err != nil {
		rb.add(c.failMsg("KILL", "TEMPORARILY_UNAVAILABLE", "Try again", nick))
		return
	}
	if res.Code != fsm.OK {
		rb.add(c.numericMsg("401", nick, "No such nick/channel"))
	}
}

// requireOper reports whether c is a server operator, answering 481 when it is not.
func (c *client) requireOper(rb *respBuf) bool {
	if !c.oper {
		rb.add(c.numericMsg("481", "Permission Denied- You're not an IRC operator"))
	}
	return c.oper
}

// closeKilled closes the local connection of a session that was killed (its end is rendered on
// every node; only the one holding the connection finds it).
func (s *Server) closeKilled(id, reason string) {
	c := s.localClient(id)
	if c == nil {
		return
	}
	c.closeWith(reason, c.line("", "ERROR", "Closing Link: "+c.host+" ("+reason+")"))
}

// handleINFO describes the server (371 lines, then 374).
func handleINFO(c *client, _ ircmsg.Message, rb *respBuf) {
	for _, l := range []string{
		"Palaver " + c.s.cfg.Version + ", an IRC server with a REST API, replicated with Raft.",
		"This is node " + c.s.cfg.NodeName + " of " + c.s.cfg.ServerName + ".",
		"Users authenticate with DIDs (SASL ATPROTO-CHALLENGE); messages are signed (ed25519).",
		"Started " + c.s.started.UTC().Format("2006-01-02 15:04:05 UTC") + ".",
	} {
		rb.add(c.numericMsg("371", l))
	}
	rb.add(c.numericMsg("374", "End of INFO list"))
}

// handleSETNAME changes the client's real name (IRCv3 setname): the change is replicated and
// every client with the capability that shares a channel with it, itself included, is told.
func handleSETNAME(c *client, m ircmsg.Message, rb *respBuf) {
	name := m.Param(0)
	if name == "" || len(name) > fsm.MaxRealnameLen {
		rb.add(c.failMsg("SETNAME", "INVALID_REALNAME", "The real name must be 1 to 128 bytes"))
		return
	}
	res, err := c.propose(fsm.SetRealname{Session: c.id, Realname: name})
	switch {
	case err != nil:
		rb.add(c.failMsg("SETNAME", "CANNOT_CHANGE_REALNAME", "Try again"))
	case res.Code == fsm.NoChange:
		if c.has(capSetname) {
			rb.add(ircmsg.Message{Source: c.hostmask(), Command: "SETNAME", Params: []string{name}, ForceTrailing: true})
		}
	case res.Code != fsm.OK:
		rb.add(c.failMsg("SETNAME", "INVALID_REALNAME", "The real name was refused"))
	}
}
