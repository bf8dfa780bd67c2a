package exchange

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/limits"
)

// Configured servers share the stream with the nodes of the cluster: the same frames (frame.go),
// the same outbox per peer over this node's durable logs (stream.go), one cursor scheme. What
// differs is plugged in by federation/peering through Servers: which servers there are and how to
// reach them (Routes), which rows are due to each (Due*: linked channels and DMs, the catch-up
// window), who signed a stream request arriving on the public HTTP plane (AuthenticateStream),
// and the checks each item from a server meets before the inbound pipeline (ReceiveFrame: the
// home rule, impostors, signatures, the federation rate limit).
//
// The cursors of a server stream are held by the sender: out:<log>:<server DID>, advanced only
// over what the server acknowledged after its durable commit.

// ServerFrame is what one frame from a configured server carries, decoded: the store's own types
// of a delete and a reaction, their Origin left for the receiver to set.
type ServerFrame struct {
	Events    []Event                    // messages and edits (wire.go), in the sender's seq order
	Deletions []eventstore.Deletion      // deletes made on the sending node, in their log's order
	Reactions []eventstore.ReactionEvent // reactions made on the sending node (reactions.go), in their log's order
}

// Taken is how much of each list of a ServerFrame the receiver took (applied, or passed over as a
// duplicate or refused item): the first Events events, and so on. A list stops short when an item
// waits (an edit or delete whose root is not stored yet): the sender keeps its cursor before it
// and sends it again later.
type Taken struct {
	Events, Deletions, Reactions int
}

// ServerRoute is a configured server this node streams its rows to.
type ServerRoute struct {
	DID       string       // did:web:<server name>
	StreamURL string       // <peer base URL>/federation/v1/stream
	Client    *http.Client // SSRF-guarded client for that peer
}

// Servers plugs the configured servers into the exchange (implemented by federation/peering).
type Servers interface {
	// Routes lists the servers this node sends to: every configured server, readonly ones too.
	Routes() []ServerRoute
	// DueMessage reports whether a row of this node is sent to server: a linked channel or a DM
	// with one of its users, no origin tag (it came from no peer), not older than the catch-up
	// window, not a TAGMSG. DueDeletion and DueReaction say the same of deletes and reactions.
	DueMessage(server string, m eventstore.Message) bool
	DueDeletion(server string, d eventstore.Deletion) bool
	DueReaction(server string, r eventstore.ReactionEvent) bool
	// AuthenticateStream names the configured server that signed a stream request arriving on
	// the public HTTP plane and the key that signed it, or refuses with an HTTP status (401 bad
	// signature or unknown kid, 403 not a configured peer or readonly). It runs before the
	// upgrade; VerifyRequest checks the signature headers.
	AuthenticateStream(r *http.Request) (server string, pub ed25519.PublicKey, status int, err error)
	// ReceiveFrame applies one frame from server (peering's checks per item, then the inbound
	// pipeline), pacing itself to the federation limit; it returns once what it took is durably
	// stored, with how much of each list it took. An error ends the stream.
	ReceiveFrame(ctx context.Context, server string, f ServerFrame) (Taken, error)
	// StreamUp: this node's stream to server is open. StreamDown: it failed or closed.
	StreamUp(server string)
	StreamDown(server string, err error)
}

// VerifyRequest checks the signature headers of an exchange request (Palaver-Node, Palaver-Date,
// Palaver-Signature over "<METHOD>\n<path?query>\n<date>\n<body>") with keys, and returns the
// signer's DID and the key that signed. A server's stream request is signed by the sending node's
// server key with the server's DID as signer (the kid names the node's key, which the server's
// did:web document lists).
func VerifyRequest(h http.Header, keys KeyLookup, method, pathQuery string, body []byte, now time.Time) (string, ed25519.PublicKey, error) {
	return verifyKey(h, keys, method, pathQuery, body, now)
}

// ServerStreamPath is where a server receives the streams of its peers' nodes, on its public HTTP
// plane.
const ServerStreamPath = "/federation/v1/stream"

// serverFrameItems caps the items of one frame to a server: the federation limit per second
// (the receiver paces itself to it). maxServerFrame bounds its size: that many items at their
// largest fit within it (limits_test.go).
const (
	serverFrameItems = limits.ServerFrameItems
	maxServerFrame   = limits.ServerFrameBytes
)

// MountPublic registers the stream route of configured servers on the public HTTP engine (GET
// /federation/v1/stream). Without Servers it registers nothing.
func (x *Exchange) MountPublic(e *gin.Engine) {
	if x.cfg.Servers == nil {
		return
	}
	h := &serverReceiver{srv: x.cfg.Servers, ctx: x.ctx, track: x.track, untrack: x.untrack, log: x.cfg.Logger}
	e.GET(ServerStreamPath, func(c *gin.Context) { h.ServeHTTP(c.Writer, c.Request) })
}

// ServerStreamHandler is the receiving end of configured servers' streams on its own, for a
// server that is not a node (a scripted peer in tests): what MountPublic serves, over srv.
func ServerStreamHandler(ctx context.Context, srv Servers, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	return &serverReceiver{srv: srv, ctx: ctx, track: func(net.Conn) bool { return ctx.Err() == nil },
		untrack: func(net.Conn) {}, log: log}
}

// serverReceiver is the receiving end of configured servers' streams: authenticated by Servers
// before the upgrade, each frame verified with the key that signed the request and handed to
// Servers.ReceiveFrame, which paces itself; the acknowledgement says how far each log was taken.
// The sender holds the cursors, so the 101 answer carries none.
type serverReceiver struct {
	srv     Servers
	ctx     context.Context
	track   func(net.Conn) bool
	untrack func(net.Conn)
	log     *slog.Logger
}

// refuse answers a stream request with the HTTP API's Error object.
func refuse(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": http.StatusText(status), "status": status, "message": message})
}

func (h *serverReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		refuse(w, http.StatusMethodNotAllowed, "GET only")
		return
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), streamProtocol) {
		refuse(w, http.StatusBadRequest, "Upgrade: "+streamProtocol+" required")
		return
	}
	server, pub, status, err := h.srv.AuthenticateStream(r)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		if status < 400 || status > 499 {
			status = http.StatusUnauthorized
		}
		msg := "stream request refused"
		if err != nil {
			msg = err.Error()
		}
		h.log.Debug("server stream refused", "remote", r.RemoteAddr, "status", status, "err", err)
		refuse(w, status, msg)
		return
	}
	conn, rw, nonce, err := acceptStream(w, "", h.track)
	if err != nil {
		if conn == nil && !errors.Is(err, errClosing) {
			refuse(w, http.StatusInternalServerError, err.Error())
		}
		return
	}
	defer conn.Close()
	defer h.untrack(conn)
	if err := h.receive(conn, rw.Reader, server, pub, nonce); err != nil && h.ctx.Err() == nil {
		h.log.Debug("stream from server ended", "server", server, "err", err)
	}
}

// receive hands the frames of one server stream to Servers.ReceiveFrame until it ends.
func (h *serverReceiver) receive(conn net.Conn, r *bufio.Reader, server string, pub ed25519.PublicKey, nonce string) error {
	fr := newFrameReader(conn, r, pub, nonce, maxServerFrame)
	var head [4]byte
	for {
		conn.SetReadDeadline(time.Now().Add(streamReadIdle))
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return err
		}
		b, err := fr.body(binary.BigEndian.Uint32(head[:]))
		if err != nil {
			return err
		}
		if n := len(b.Events) + len(b.Deletions) + len(b.Reactions); n > serverFrameItems {
			return fmt.Errorf("frame of %d items, more than %d", n, serverFrameItems)
		}
		taken, err := h.srv.ReceiveFrame(h.ctx, server, ServerFrame{Events: b.Events, Deletions: b.Deletions, Reactions: b.Reactions})
		if err != nil {
			return fmt.Errorf("receive frame: %w", err)
		}
		ack := positions{
			msgs:   through(span{b.After, b.Last}, taken.Events, len(b.Events), func(i int) int64 { return b.Events[i].OriginSeq }),
			dels:   through(b.Dels, taken.Deletions, len(b.Deletions), func(i int) int64 { return b.Deletions[i].Seq }),
			reacts: through(b.Reacts, taken.Reactions, len(b.Reactions), func(i int) int64 { return b.Reactions[i].Seq }),
		}
		if err := fr.ack(ack); err != nil {
			return err
		}
	}
}

// through is how far a section of n records was taken when its first taken ones were: its last
// when all of them were, else the seq of the last one taken (its after when none was).
func through(s span, taken, n int, seq func(int) int64) int64 {
	switch {
	case taken >= n:
		return s.Last
	case taken <= 0:
		return s.After
	}
	return seq(taken - 1)
}

// startServerStreams starts one stream per configured server (Servers.Routes), so each link's
// state is known without traffic.
func (x *Exchange) startServerStreams() {
	if x.cfg.Servers == nil {
		return
	}
	for _, r := range x.cfg.Servers.Routes() {
		x.mu.Lock()
		if _, ok := x.serverBoxes[r.DID]; ok || x.ctx.Err() != nil {
			x.mu.Unlock()
			continue
		}
		o := newOutbox()
		x.serverBoxes[r.DID] = o
		x.wg.Add(1)
		x.mu.Unlock()
		go x.serverLoop(r, o)
	}
}

// serverLoop keeps a stream to one configured server open, reconnecting with backoff. A slow or
// dead server holds only this goroutine; its queue is this node's durable logs.
func (x *Exchange) serverLoop(r ServerRoute, o *outbox) {
	defer x.wg.Done()
	backoff := minBackoff
	for x.ctx.Err() == nil {
		var sent bool
		var err error
		x.safely("server stream", func() { sent, err = x.runServerStream(r, o) }, "server", r.DID)
		if !x.backOff(o, &backoff, sent, r.DID, err) {
			return
		}
	}
}

// serverCursor is server's acknowledged position in this node's log l.
func serverCursor(server string, l Log) CursorKey { return CursorKey{Dir: Out, Log: l, Peer: server} }

// runServerStream sends this node's rows due to a configured server over one stream until it
// fails: from the sender-held cursors out:<log>:<server>, each advanced only over what the server
// acknowledged. sent reports whether any frame was acknowledged.
func (x *Exchange) runServerStream(r ServerRoute, o *outbox) (sent bool, err error) {
	ctx, cancel := context.WithCancel(x.ctx)
	defer cancel()
	var pos positions
	var errs [3]error
	pos.msgs, errs[0] = ReadCursor(ctx, x.cfg.Store, serverCursor(r.DID, LogMessages))
	pos.dels, errs[1] = ReadCursor(ctx, x.cfg.Store, serverCursor(r.DID, LogDeletes))
	pos.reacts, errs[2] = ReadCursor(ctx, x.cfg.Store, serverCursor(r.DID, LogReactions))
	if err := errors.Join(errs[:]...); err != nil {
		return false, err
	}
	t := time.AfterFunc(10*time.Second, cancel)
	sc, err := DialServerStream(ctx, r.Client, r.StreamURL, x.cfg.Key, x.cfg.ServerDID)
	if !t.Stop() && err == nil {
		sc.Close()
		err = errors.New("open stream: handshake timed out")
	}
	if err != nil {
		x.cfg.Servers.StreamDown(r.DID, err)
		return false, err
	}
	defer sc.Close()
	stop := context.AfterFunc(ctx, func() { sc.Close() })
	defer stop()
	x.cfg.Servers.StreamUp(r.DID)
	defer func() { x.cfg.Servers.StreamDown(r.DID, err) }()
	heartbeat := heartbeatTimer{time.NewTimer(streamHeartbeat)}
	defer heartbeat.Stop()
	o.mark(true, true, true)
	beat := false
	for {
		b, more, err := x.collectForServer(ctx, r.DID, o, pos)
		if err != nil {
			return sent, err
		}
		examined := b.Last > b.After || b.Dels.Last > b.Dels.After || b.Reacts.Last > b.Reacts.After
		items := len(b.Events) + len(b.Deletions) + len(b.Reactions)
		var ack positions
		switch {
		case items > 0 || beat:
			if x.cfg.BeforeFrame != nil {
				x.cfg.BeforeFrame()
			}
			if ack, err = sc.conn.send(appendBatch(sc.conn.batch(), b)); err != nil {
				return sent, err
			}
			x.framesSent.Add(1)
			sent, beat = true, false
			heartbeat.restart()
		case examined: // nothing due in what was read: passed over without a frame
			ack = positions{msgs: b.Last, dels: b.Dels.Last, reacts: b.Reacts.Last}
		default:
			select {
			case <-ctx.Done():
				return sent, ctx.Err()
			case <-sc.conn.dead:
				return sent, sc.conn.closed()
			case <-o.wake:
			case <-heartbeat.C:
				beat = true
				o.mark(true, true, true)
			}
			continue
		}
		for _, l := range []struct {
			log  Log
			pos  *int64
			s    span
			ack  int64
			more bool
			flag *atomic.Bool
		}{
			{LogMessages, &pos.msgs, span{b.After, b.Last}, ack.msgs, more.msgs, &o.msgs},
			{LogDeletes, &pos.dels, b.Dels, ack.dels, more.dels, &o.dels},
			{LogReactions, &pos.reacts, b.Reacts, ack.reacts, more.reacts, &o.reacts},
		} {
			a := min(max(l.ack, l.s.After), l.s.Last) // a server can only acknowledge what it was sent
			if a > *l.pos {
				if err := WriteCursor(ctx, x.cfg.Store, serverCursor(r.DID, l.log), a); err != nil {
					return sent, err
				}
				*l.pos = a
			}
			// A log taken through what was read, with more to read, is read again at once; one
			// that stopped short waits on the server: it is read again when it has a new row, or
			// at the heartbeat.
			if a == l.s.Last && l.more {
				l.flag.Store(true)
			}
		}
	}
}

// logFlags says something of each of the three logs.
type logFlags struct{ msgs, dels, reacts bool }

// collectForServer reads the logs whose flags are set after pos and keeps the rows due to
// server: at most serverFrameItems in all. Each section's last is the last row examined (sent or
// passed over); more says which logs have rows left to examine.
func (x *Exchange) collectForServer(ctx context.Context, server string, o *outbox, pos positions) (streamBatch, logFlags, error) {
	self := Name(x.cfg.Self)
	b := streamBatch{After: pos.msgs, Last: pos.msgs, Dels: span{pos.dels, pos.dels}, Reacts: span{pos.reacts, pos.reacts}}
	var more logFlags
	room := serverFrameItems
	srv := x.cfg.Servers
	var err error
	if o.msgs.Swap(false) {
		more.msgs, err = takeDue(ctx, func(ctx context.Context) ([]eventstore.Message, error) {
			return x.cfg.Store.OriginAfter(ctx, self, pos.msgs, x.cfg.PageSize)
		}, x.cfg.PageSize, &room, func(m eventstore.Message) int64 { return m.Seq },
			func(m eventstore.Message) bool { return srv.DueMessage(server, m) },
			func(m eventstore.Message) { b.Events = append(b.Events, eventOf(m)) }, &b.Last)
		if err != nil {
			return b, more, fmt.Errorf("read outbox: %w", err)
		}
	}
	err = x.collectLogs(ctx, o, &b, &more, room, func(d eventstore.Deletion) bool { return srv.DueDeletion(server, d) },
		func(r eventstore.ReactionEvent) bool { return srv.DueReaction(server, r) })
	return b, more, err
}

// collectLogs reads the deletes and reactions logs whose flags are set, after b's sections, into
// b: the records due, at most room of them in all.
func (x *Exchange) collectLogs(ctx context.Context, o *outbox, b *streamBatch, more *logFlags, room int,
	dueDel func(eventstore.Deletion) bool, dueReact func(eventstore.ReactionEvent) bool) error {
	self := Name(x.cfg.Self)
	var err error
	if o.dels.Swap(false) {
		after := b.Dels.After
		more.dels, err = takeDue(ctx, func(ctx context.Context) ([]eventstore.Deletion, error) {
			return x.cfg.Store.DeletionsAfter(ctx, self, after, x.cfg.PageSize)
		}, x.cfg.PageSize, &room, func(d eventstore.Deletion) int64 { return d.Seq }, dueDel,
			func(d eventstore.Deletion) { b.Deletions = append(b.Deletions, d) }, &b.Dels.Last)
		if err != nil {
			return fmt.Errorf("read deletes: %w", err)
		}
	}
	if o.reacts.Swap(false) {
		after := b.Reacts.After
		more.reacts, err = takeDue(ctx, func(ctx context.Context) ([]eventstore.ReactionEvent, error) {
			return x.cfg.Store.ReactionLogAfter(ctx, self, after, x.cfg.PageSize)
		}, x.cfg.PageSize, &room, func(r eventstore.ReactionEvent) int64 { return r.Seq }, dueReact,
			func(r eventstore.ReactionEvent) { b.Reactions = append(b.Reactions, r) }, &b.Reacts.Last)
		if err != nil {
			return fmt.Errorf("read reactions: %w", err)
		}
	}
	return nil
}

// takeDue reads one page of a log and adds the rows due, while room lasts; last becomes the seq
// of the last row examined. It reports whether the log has rows left to examine.
func takeDue[T any](ctx context.Context, read func(context.Context) ([]T, error), page int, room *int,
	seq func(T) int64, due func(T) bool, add func(T), last *int64) (bool, error) {
	rows, err := read(ctx)
	if err != nil {
		return false, err
	}
	for _, r := range rows {
		if due(r) {
			if *room == 0 {
				return true, nil
			}
			add(r)
			*room--
		}
		*last = seq(r)
	}
	return len(rows) == page, nil
}

// ServerConn is the sending end of a stream to a configured server (DialServerStream).
type ServerConn struct {
	conn *frameConn
}

// DialServerStream opens a stream to a configured server at streamURL (its
// /federation/v1/stream) over client, the request signed by key with signer as the signing
// server's DID. A refusal is a *RefusedError with the server's status.
func DialServerStream(ctx context.Context, client *http.Client, streamURL string, key ed25519.PrivateKey, signer string) (*ServerConn, error) {
	u, err := url.Parse(streamURL)
	if err != nil {
		return nil, fmt.Errorf("open stream: %w", err)
	}
	c := *client
	c.Timeout = 0 // the stream outlives any request timeout
	resp, nonce, err := upgrade(ctx, &c, streamURL, u.RequestURI(), key, signer, time.Now())
	if err != nil {
		return nil, err
	}
	return &ServerConn{conn: newFrameConn(resp.Body.(io.ReadWriteCloser), key, nonce)}, nil
}

// Send sends f as one frame, each list a section from just before its first record's seq
// through its last one's, and returns how much of each list the server took.
func (s *ServerConn) Send(f ServerFrame) (Taken, error) {
	b := streamBatch{Events: f.Events, Deletions: f.Deletions, Reactions: f.Reactions}
	if n := len(f.Events); n > 0 {
		b.After, b.Last = f.Events[0].OriginSeq-1, f.Events[n-1].OriginSeq
	}
	if n := len(f.Deletions); n > 0 {
		b.Dels = span{f.Deletions[0].Seq - 1, f.Deletions[n-1].Seq}
	}
	if n := len(f.Reactions); n > 0 {
		b.Reacts = span{f.Reactions[0].Seq - 1, f.Reactions[n-1].Seq}
	}
	ack, err := s.conn.send(appendBatch(s.conn.batch(), b))
	if err != nil {
		return Taken{}, err
	}
	count := func(n int, seq func(int) int64, through int64) int {
		k := 0
		for k < n && seq(k) <= through {
			k++
		}
		return k
	}
	return Taken{
		Events:    count(len(f.Events), func(i int) int64 { return f.Events[i].OriginSeq }, ack.msgs),
		Deletions: count(len(f.Deletions), func(i int) int64 { return f.Deletions[i].Seq }, ack.dels),
		Reactions: count(len(f.Reactions), func(i int) int64 { return f.Reactions[i].Seq }, ack.reacts),
	}, nil
}

// Close ends the stream.
func (s *ServerConn) Close() error { return s.conn.conn.Close() }
