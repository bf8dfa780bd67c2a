package irc

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/gateway/sasl"
	"github.com/palaver-chat/palaver/gateway/transport"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// client is one connection. Fields without a comment are owned by the connection's reader
// goroutine; the rest say how they are guarded.
type client struct {
	s      *Server
	conn   transport.Conn
	q      *sendQueue
	id     string // session id, minted at connect
	secure bool

	caps       atomic.Uint32 // capBits; read by the observer
	registered atomic.Bool
	capBusy    bool // CAP LS/REQ seen and CAP END not yet
	cap302     bool

	nick, user, realname string
	host                 string // cloak
	oper                 bool
	wallops              atomic.Bool // user mode +w: receives WALLOPS (wallops.go); read by deliverers
	sasl                 *sasl.Conversation
	saslLocked           bool
	passwordLogin        bool              // logged in with a client password (logins.go)
	refusedNick          string            // the last nick refused as in use before registration (register.go)
	preMetadata          map[string]string // keys set before registration, applied by it (metadata.go)

	// lock tier 5: guards did and tokenHash (read by ResolveToken); taken under Server.mu
	authMu    sync.Mutex
	did       string
	tokenHash string

	// lock tier 9 (leaf): guards the MSGSIG session key (read by the key-expiry sweep)
	sigMu      sync.Mutex
	sessionKey ed25519.PublicKey
	sessionKID string

	flood floodState

	alive clientKeepalive // the last input and an unanswered PING (keepalive.go)

	pipe pipeline // messages being stored and delivered behind the read loop

	// lock tier 6: the response buffer redirection; takes only send queues
	rbMu         sync.Mutex
	rb           *respBuf // set while the client's own command runs
	pending      [][]byte // others' traffic that arrived while rb was set, sent after the replies
	pendingBytes int

	quit       bool
	quitReason string
	// closedBy is why the server closed the connection itself (ping timeout, key expiry), shown
	// to the others as the QUIT reason.
	closedBy atomic.Value

	ml        *multilineBatch // the open draft/multiline batch (multiline.go); reader goroutine only
	mlRefused string          // the reference of a refused batch whose lines are still coming
	markers   connMarkers     // read markers kept for this connection alone (readmarker.go)
	pass      string          // the PASS the client sent (pass.go); reader goroutine only
	unsure    unsureJoins     // JOINs told FAIL whose outcome was unknown (channels.go)
}

// closeWith closes the connection from the server side, after sending lines, with a reason.
func (c *client) closeWith(reason string, lines ...[]byte) {
	c.closedBy.CompareAndSwap(nil, reason)
	c.q.closeAfterFlush(lines...)
}

func (s *Server) newClient(conn transport.Conn) *client {
	c := &client{s: s, conn: conn, id: ulid.Make().String(), secure: conn.Kind() == "tls"}
	c.q = newSendQueue(conn, s.cfg.SendQBytes, func() {
		if s.cfg.Metrics != nil {
			s.cfg.Metrics.SendQueueExceeded.Inc()
		}
	})
	c.host = cloak("")
	c.sasl = sasl.NewConversation(s.verifier, c.id, nil)
	c.flood.init(s.cfg.FloodLimits)
	c.pipe.init(c)
	return c
}

// Handle serves one connection until it closes. Every transport calls it.
//
// The calling goroutine becomes the connection's reader, parked in a read while the connection
// idles; everything else runs on the server's handlers (see readLoop) and this frame stays small,
// so that the reader keeps the runtime's smallest stack.
func (s *Server) Handle(conn transport.Conn) {
	s.startServing()
	var c *client
	s.handlers.runAndWait(func() { c = s.connect(conn) })
	reason := c.readLoop()
	s.handlers.runAndWait(func() { c.disconnect(reason) })
}

// connect sets up the session of a new connection.
func (s *Server) connect(conn transport.Conn) *client {
	c := s.newClient(conn)
	s.conns.Add(1)
	if m := s.cfg.Metrics; m != nil {
		m.Connections.WithLabelValues(conn.Kind()).Inc()
		m.ConnectionsTotal.WithLabelValues(conn.Kind()).Inc()
	}
	s.keepalive.add(c)
	return c
}

// disconnect ends the session once its input has ended.
func (c *client) disconnect(reason string) {
	s := c.s
	c.pipe.wait() // messages already read are stored and delivered before the session ends
	s.keepalive.remove(c)
	c.recordDisconnect(reason) // disconnects.go
	c.finish(reason)
	s.conns.Add(-1)
	if m := s.cfg.Metrics; m != nil {
		m.Connections.WithLabelValues(c.conn.Kind()).Dec()
	}
}

// readLoop reads the connection's lines and returns the reason the session ended.
//
// The goroutine that waits in ReadLine only reads: each line is handled on one of the server's
// handlers (handlers.go) while the reader waits for it, so lines are still handled one at a time
// and in order. Handling a command goes deep (proposals, rendering, replies) and grows a
// goroutine's stack to 8 KiB or more; the runtime gives a grown stack back only by halves, at a
// GC, and only while little of it is in use, so a reader that handled commands itself would keep
// that stack for as long as its connection idles. A reader that never handles anything stays at
// its small starting stack.
func (c *client) readLoop() string {
	h := &lineHandoff{c: c}
	// Bound once: a method value made per line would allocate a closure per line, and an
	// allocation on the reader can go deep into the runtime (a span refill, the start of a GC).
	run := h.run
	for {
		h.line, h.readErr = c.conn.ReadLine()
		if h.readErr != nil && !errors.Is(h.readErr, transport.ErrLineTooLong) {
			return c.closeReason()
		}
		h.done.Add(1)
		c.s.handlers.run(run)
		h.done.Wait()
		if h.stop {
			return h.reason
		}
	}
}

// lineHandoff carries a line from the connection's reader to the goroutine that handles it, and
// the outcome back. The reader waits on done while the line is handled.
type lineHandoff struct {
	c       *client
	line    []byte
	readErr error
	reason  string
	stop    bool
	done    sync.WaitGroup
}

func (h *lineHandoff) run() {
	defer h.done.Done()
	defer func() {
		if h.c.recovered(recover(), "command") { // recover.go
			h.reason, h.stop = panicReason, true
		}
	}()
	h.reason, h.stop = h.c.handleInput(h.line, h.readErr)
}

// closeReason is the QUIT reason of a connection whose input ended.
func (c *client) closeReason() string {
	if r, ok := c.closedBy.Load().(string); ok {
		return r
	}
	if c.q.overflowed() {
		return "SendQ exceeded"
	}
	return "Connection closed"
}

// handleInput handles one line read from the connection (or an over-long line that was dropped)
// and reports whether the session ends with it, and why.
func (c *client) handleInput(raw []byte, readErr error) (reason string, stop bool) {
	c.touch()
	if readErr != nil || tagDataTooLong(raw) { // transport.ErrLineTooLong: the line was dropped
		c.pipe.wait()
		c.sendNow(c.numericMsg("417", "Input line was too long"))
		return "", false
	}
	msg, err := ircmsg.Parse(string(raw))
	if err != nil {
		if !errors.Is(err, ircmsg.ErrEmpty) {
			c.pipe.wait()
			c.sendNow(c.failMsg("*", "INVALID_LINE", "Malformed IRC line"))
		}
		return "", false
	}
	c.dispatch(msg)
	return c.quitReason, c.quit
}

// finish removes the session everywhere once the connection is gone.
func (c *client) finish(reason string) {
	s := c.s
	// End the session in the replicated state first: its nick is free again by the time the
	// client sees the connection close, so an immediate reconnect can take it.
	if c.registered.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if _, err := s.proposer.Propose(ctx, fsm.EndSession{Session: c.id, Reason: reason}); err != nil {
			s.log.Warn("end session", "session", c.id, "err", err)
		}
		cancel()
	}
	s.forgetClient(c)
	s.mu.Lock()
	s.dropClient(c)
	c.authMu.Lock()
	if c.tokenHash != "" && s.pending[c.tokenHash] == c {
		delete(s.pending, c.tokenHash)
	}
	c.authMu.Unlock()
	s.mu.Unlock()
	c.q.closeAfterFlush()
	// The transport closes the connection when Handle returns: let the last lines (ERROR, 904)
	// reach the client first, but never wait long for a client that does not read.
	select {
	case <-c.q.whenClosed():
	case <-time.After(5 * time.Second):
		c.q.closeNow()
	}
}

// touch records input activity for the keepalive.
func (c *client) touch() { c.s.keepalive.touch(c) }

func (c *client) capBits() capBits   { return capBits(c.caps.Load()) }
func (c *client) has(b capBits) bool { return c.capBits()&b != 0 }
func (c *client) displayNick() string {
	if c.nick == "" {
		return "*"
	}
	return c.nick
}

func (c *client) hostmask() string { return c.nick + "!" + c.user + "@" + c.host }

func (c *client) pendingDID() string {
	c.authMu.Lock()
	defer c.authMu.Unlock()
	return c.did
}

func (c *client) currentDID() string { return c.pendingDID() }

// line renders a simple line (source may be empty).
func (c *client) line(source, command string, params ...string) []byte {
	m := ircmsg.Message{Source: source, Command: command, Params: params}
	return m.AppendTo(nil)
}

func (c *client) numericMsg(code string, params ...string) ircmsg.Message {
	p := make([]string, 0, len(params)+1)
	p = append(p, c.displayNick())
	p = append(p, params...)
	return ircmsg.Message{Source: c.s.cfg.ServerName, Command: code, Params: safeMiddles(p)}
}

// safeMiddles replaces middle parameters that cannot be written as such (empty, containing a
// space, or starting with ':') — typically a client's own input echoed back — with "*", so a
// reply can never be parsed as different parameters than the server meant.
func safeMiddles(p []string) []string {
	for i := 0; i < len(p)-1; i++ {
		if p[i] == "" || p[i][0] == ':' || strings.IndexByte(p[i], ' ') >= 0 {
			p[i] = "*"
		}
	}
	return p
}

func (c *client) failMsg(command, code, text string, context ...string) ircmsg.Message {
	p := append([]string{command, code}, context...)
	p = append(p, text)
	return ircmsg.Message{Source: c.s.cfg.ServerName, Command: "FAIL", Params: safeMiddles(p)}
}

// sendNow queues a message outside any command (no label).
func (c *client) sendNow(m ircmsg.Message) { c.q.enqueue(m.AppendTo(nil)) }

// deliver queues a fanned-out message to this client, or to its response buffer when the message
// was caused by the client's own command.
//
// While the client's own command runs, everyone else's traffic is held back and queued right after
// the command's replies, so a client never sees channel traffic before its own JOIN.
func (c *client) deliver(o *outMsg, own bool) { c.deliverLive(o, own, false) }

// inlineFanOut is the most recipients a message may have for the delivering goroutine to write
// to their idle connections itself (sendQueue.post): about 5 µs of a loopback write each, so the
// sender spends at most ~0.2 ms on it, and a larger fan-out is written by the queues' writer
// goroutines on every core.
const inlineFanOut = 32

// deliverLive is deliver for a message with n recipients; with inline (n ≤ inlineFanOut) an
// idle connection is written to by the calling goroutine (sendQueue.post).
func (c *client) deliverLive(o *outMsg, own, inline bool) {
	c.rbMu.Lock()
	if rb := c.rb; rb != nil {
		if own {
			rb.msgs = append(rb.msgs, o.expand(c.capBits())...) // rbMu is held
			c.rbMu.Unlock()
			return
		}
		line := o.bytesFor(c.capBits())
		if c.pendingBytes+len(line) > c.s.cfg.SendQBytes {
			c.rbMu.Unlock()
			c.q.exceed()
			return
		}
		c.pending = append(c.pending, line)
		c.pendingBytes += len(line)
		c.rbMu.Unlock()
		return
	}
	c.rbMu.Unlock()
	c.q.post(o.bytesFor(c.capBits()), inline)
}

// deliverLines is deliverLive for several lines of other clients' messages at once (batchFanOut):
// one append to the queue, or to the lines held back while this client's own command runs.
func (c *client) deliverLines(lines [][]byte) {
	c.rbMu.Lock()
	if c.rb != nil {
		n := 0
		for _, l := range lines {
			n += len(l)
		}
		if c.pendingBytes+n > c.s.cfg.SendQBytes {
			c.rbMu.Unlock()
			c.q.exceed()
			return
		}
		c.pending = append(c.pending, lines...)
		c.pendingBytes += n
		c.rbMu.Unlock()
		return
	}
	c.rbMu.Unlock()
	c.q.enqueue(lines...)
}

// endCommand sends a command's replies, then the traffic held back while it ran. A command that
// left a message to store, or that follows messages still in flight, is queued on the
// connection's pipeline instead: its replies follow theirs.
func (c *client) endCommand(rb *respBuf) {
	c.rbMu.Lock()
	queue := rb.after != nil || !c.pipe.idle()
	if !queue {
		rb.flush()
	}
	if len(c.pending) > 0 {
		c.q.enqueue(c.pending...)
	}
	c.pending, c.pendingBytes, c.rb = nil, 0, nil
	c.rbMu.Unlock()
	if queue {
		c.pipe.submit(queuedCommand{rb: rb, step: rb.after})
	}
}

// handler is one row of the command table.
type handler struct {
	fn        func(c *client, m ircmsg.Message, rb *respBuf)
	minParams int
	preReg    bool // allowed before registration
	exempt    bool // exempt from the command flood limit
}

func (c *client) dispatch(m ircmsg.Message) {
	if c.collectMultiline(m) {
		return
	}
	h, ok := c.s.lookupCommand(m.Command)
	pipelined := ok && c.pipelinable(m)
	if !pipelined {
		c.pipe.wait() // state changes and their replies never overtake earlier messages
	}
	rb := &respBuf{c: c, pipelined: pipelined}
	if label, has := m.Tags["label"]; has && c.has(capLabeledResponse) && label != "" && len(label) <= 64 {
		rb.label = label
	}
	c.rbMu.Lock()
	c.rb = rb
	c.rbMu.Unlock()
	defer c.endCommand(rb)
	if !ok {
		if c.registered.Load() {
			rb.add(c.numericMsg("421", m.Command, "Unknown command"))
		}
		return
	}
	if !h.preReg && !c.registered.Load() {
		rb.add(c.numericMsg("451", "You have not registered"))
		return
	}
	if !c.admitFlood(m, h.exempt, rb) {
		return
	}
	if len(m.Params) < h.minParams {
		rb.add(c.numericMsg("461", m.Command, "Not enough parameters"))
		return
	}
	h.fn(c, m, rb)
	c.chargeFlood(m, rb)
}

// upgradingText is the FAIL text of a change refused because a node of the cluster runs an
// earlier version that could not apply it (fsm.ErrClusterUpgrading); other errors keep text.
func upgradingText(err error, text string) string {
	if errors.Is(err, fsm.ErrClusterUpgrading) {
		return "The server is being upgraded: this is possible once every node runs the new version"
	}
	return text
}

// propose submits a command on behalf of this client.
func (c *client) propose(cmd fsm.Command) (fsm.Result, error) {
	ctx, cancel := context.WithTimeout(c.s.ctx, 15*time.Second)
	defer cancel()
	res, err := c.s.proposer.Propose(ctx, cmd)
	if err != nil {
		c.s.log.Warn("proposal failed", "session", c.id, "command", fmt.Sprintf("%T", cmd), "err", err)
	}
	return res, err
}
