package irc

import (
	"strings"
	"time"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// DisconnectRecorder is told why each connection of this node that registered ended.
type DisconnectRecorder interface {
	RecordDisconnect(d Disconnect)
}

// Disconnect is one ended connection.
type Disconnect struct {
	Session   string
	Nick      string
	DID       string // "" for a guest
	Transport string // tcp, tls or websocket
	// Kind classifies Reason: ping_timeout, sendq_overflow, flood, kill, restart, quit,
	// signing_key, registration, server_error or connection_closed.
	Kind        string
	Reason      string // the QUIT reason others were shown
	ConnectedAt time.Time
	At          time.Time
}

// Disconnect kinds.
const (
	DisconnectPingTimeout  = "ping_timeout"
	DisconnectSendQ        = "sendq_overflow"
	DisconnectFlood        = "flood"
	DisconnectKill         = "kill"
	DisconnectRestart      = "restart"
	DisconnectQuit         = "quit"
	DisconnectSigningKey   = "signing_key"
	DisconnectRegistration = "registration"
	DisconnectServerError  = "server_error"
	DisconnectClosedByPeer = "connection_closed"
)

// DisconnectKind classifies the reason a session ended (as the edge proposed it, or a node's
// purge); closing is true when the server is shutting down.
func DisconnectKind(reason string, closing bool) string {
	switch {
	case reason == "Ping timeout":
		return DisconnectPingTimeout
	case reason == "SendQ exceeded":
		return DisconnectSendQ
	case strings.Contains(reason, "Excess Flood"):
		return DisconnectFlood
	case strings.HasPrefix(reason, killPrefix):
		return DisconnectKill
	case reason == "Quit" || strings.HasPrefix(reason, "Quit: "):
		return DisconnectQuit
	case strings.HasPrefix(reason, "Signing key "):
		return DisconnectSigningKey
	case reason == "Too many SASL failures" || reason == "Registration failed" || reason == "Authentication required":
		return DisconnectRegistration
	case reason == panicReason:
		return DisconnectServerError
	case closing, reason == "Server restarted", reason == "Node left the cluster":
		return DisconnectRestart
	}
	return DisconnectClosedByPeer
}

// recordDisconnect tells the configured recorder how a connection ended.
// It runs before the session ends in the replicated state, whose record of it gives the
// connection time.
func (c *client) recordDisconnect(reason string) {
	r := c.s.cfg.Disconnects
	if r == nil || !c.registered.Load() {
		return
	}
	var connectedAt time.Time
	c.s.state.Read(func(st *fsm.State) {
		if se, ok := fsm.Diagnose(st).SessionByID(c.id); ok {
			connectedAt = time.UnixMilli(se.ConnectedAt)
		}
	})
	closing := c.s.ctx.Err() != nil
	if closing && reason == "Connection closed" {
		reason = "Server shutting down"
	}
	r.RecordDisconnect(Disconnect{
		Session: c.id, Nick: c.nick, DID: c.currentDID(), Transport: c.conn.Kind(),
		Kind: DisconnectKind(reason, closing), Reason: reason, ConnectedAt: connectedAt, At: time.Now(),
	})
}
