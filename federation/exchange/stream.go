package exchange

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/limits"
	"github.com/palaver-chat/palaver/node/signing"
)

// The stream: one long-lived connection per peer carries what this node originated, read from
// its durable logs (the outbox), to that peer, which applies it and moves its cursors.
//
// The origin opens it with GET /internal/v1/stream (Upgrade: palaver-exchange/2, signed like every
// exchange request). The receiver authenticates the connection's TLS peer and the signature, and
// answers 101 with its cursors for the origin (Palaver-Cursor: messages, Palaver-Cursor-Deletes,
// Palaver-Cursor-Reactions) and a fresh nonce (Palaver-Stream-Nonce); the connection then carries
// frames one way and acknowledgements the other. The origin reads its own rows after the cursors
// (only rows it stored durably), sends them as one frame, waits for the acknowledgement, and goes
// on from there; with nothing left it waits, idle, until this node stores another row (or sends
// an empty frame as a heartbeat every streamHeartbeat). While the receiver stores one frame the
// rows of the next accumulate, so a frame grows with the load (up to PageSize rows a log):
// batched by time and size without a timer. The deletes and reactions logs are read only when
// they grew (or at the heartbeat): a delete that waits on the receiver for its message is not
// sent again and again.
//
// A frame is a 4-byte big-endian length, the batch in its binary form (frame.go), and the
// origin's ed25519 signature over "palaver-exchange/2\n<nonce>\n<batch>": one signature per
// frame, bound to this stream; each message keeps its own +freeq.at/sig. The receiver stores a
// frame's events in one durable commit and, when it had stored the origin's rows through the
// section's after, moves its cursor to the section's last: a cursor never passes a row that is
// not stored here. Deletes and reactions are applied in order; one whose message is not here yet
// stops its section, and that log's cursor stays before it. The receiver then answers with its
// three positions (24 bytes, big-endian). A malformed frame, a bad signature or a store failure
// ends the stream; the origin reconnects (with backoff) and resumes from the receiver's cursors.
// While a stream is healthy its receiver pulls nothing from the origin (pull.go): the pull is the
// catch-up while the stream is down or silent.
//
// Each peer has its own stream and goroutine, and the queue is the durable log itself: a slow or
// dead peer holds only its own stream, and no memory grows with its backlog. The same stream runs
// to configured servers (servers.go), with cursors the sender holds.

const (
	streamPath            = "/internal/v1/stream"
	streamProtocol        = "palaver-exchange/2"
	headerCursor          = "Palaver-Cursor"
	headerCursorDeletes   = "Palaver-Cursor-Deletes"
	headerCursorReactions = "Palaver-Cursor-Reactions"
	headerNonce           = "Palaver-Stream-Nonce"
	streamHeartbeat       = 3 * time.Second
	streamAckTimeout      = 30 * time.Second
	streamReadIdle        = 3 * streamHeartbeat
	maxFrame              = limits.StreamFrameBytes
	ackSize               = 24
)

// frameSigningInput is what the origin signs for one frame of a stream.
func frameSigningInput(nonce string, batch []byte) []byte {
	out := make([]byte, 0, len(streamProtocol)+len(nonce)+len(batch)+2)
	out = append(out, streamProtocol...)
	out = append(out, '\n')
	out = append(out, nonce...)
	out = append(out, '\n')
	return append(out, batch...)
}

// positions is a peer's place in each of an origin's logs: the last seq of its messages, of its
// deletes and of its reactions it has.
type positions struct{ msgs, dels, reacts int64 }

func (p positions) ack() [ackSize]byte {
	var b [ackSize]byte
	binary.BigEndian.PutUint64(b[0:], uint64(p.msgs))
	binary.BigEndian.PutUint64(b[8:], uint64(p.dels))
	binary.BigEndian.PutUint64(b[16:], uint64(p.reacts))
	return b
}

func positionsOf(b [ackSize]byte) positions {
	return positions{msgs: int64(binary.BigEndian.Uint64(b[0:])), dels: int64(binary.BigEndian.Uint64(b[8:])),
		reacts: int64(binary.BigEndian.Uint64(b[16:]))}
}

// outbox is one peer's stream sender: its goroutine and the signals that new rows were stored.
type outbox struct {
	wake  chan struct{}
	retry chan struct{} // Kick: reconnect now, without waiting out the backoff
	// live is set while the stream is open: it sends every row after the peer's cursor.
	live atomic.Bool
	// rescan has the live stream's next read take every durable row, not only those published
	// (Kick: the stored stream dropped items, so some rows were never published).
	rescan atomic.Bool
	// msgs, dels, reacts: this node stored a row in that log the stream has not read yet. A log
	// is read only when its flag is set (or at the heartbeat), so a delete that waits on the
	// receiver for its message is not sent again and again.
	msgs, dels, reacts atomic.Bool
}

// mark sets the flags of the logs that have new rows and wakes the stream.
func (o *outbox) mark(msgs, dels, reacts bool) {
	if msgs {
		o.msgs.Store(true)
	}
	if dels {
		o.dels.Store(true)
	}
	if reacts {
		o.reacts.Store(true)
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// streamLive reports whether this node's stream to peer is open.
func (x *Exchange) streamLive(peer string) bool {
	x.mu.Lock()
	o := x.outboxes[peer]
	x.mu.Unlock()
	return o != nil && o.live.Load()
}

// notifyOutboxes tells every stream that this node stored a row in the named logs, starting the
// stream of a cluster peer that has none yet.
func (x *Exchange) notifyOutboxes(msgs, dels, reacts bool) {
	if x.cfg.Peers != nil {
		for _, p := range x.cfg.Peers() {
			x.outbox(p.DID).mark(msgs, dels, reacts)
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, o := range x.serverBoxes {
		o.mark(msgs, dels, reacts)
	}
}

// retryStreams has every stream waiting to reconnect try at once (the peers changed), and every
// live one read each of its logs again.
func (x *Exchange) retryStreams() {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, boxes := range []map[string]*outbox{x.outboxes, x.serverBoxes} {
		for _, o := range boxes {
			o.rescan.Store(true)
			o.mark(true, true, true)
			select {
			case o.retry <- struct{}{}:
			default:
			}
		}
	}
}

func newOutbox() *outbox {
	return &outbox{wake: make(chan struct{}, 1), retry: make(chan struct{}, 1)}
}

func (x *Exchange) outbox(did string) *outbox {
	x.mu.Lock()
	defer x.mu.Unlock()
	o, ok := x.outboxes[did]
	if !ok {
		o = newOutbox()
		x.outboxes[did] = o
		x.wg.Add(1)
		go x.outboxLoop(did, o)
	}
	return o
}

// peerByDID finds a peer in the current peer list.
func (x *Exchange) peerByDID(did string) (Peer, bool) {
	for _, p := range x.cfg.Peers() {
		if p.DID == did {
			return p, true
		}
	}
	return Peer{}, false
}

const minBackoff, maxBackoff = 50 * time.Millisecond, 5 * time.Second

// outboxLoop keeps a stream to one peer open while the peer is listed, reconnecting with backoff.
func (x *Exchange) outboxLoop(did string, o *outbox) {
	defer x.wg.Done()
	backoff := minBackoff
	for x.ctx.Err() == nil {
		p, ok := x.peerByDID(did)
		if !ok { // not a live peer now: wait for the next message (the pull catches it up)
			select {
			case <-x.ctx.Done():
				return
			case <-o.wake:
			}
			continue
		}
		var sent bool
		var err error
		x.safely("stream", func() { sent, err = x.runStream(p, o) }, "peer", did)
		if !x.backOff(o, &backoff, sent, did, err) {
			return
		}
	}
}

// backOff waits before a stream reconnects: the backoff, doubled each time up to maxBackoff, back
// to minBackoff after a stream that sent something or when retry says so. False: the exchange is
// closing.
func (x *Exchange) backOff(o *outbox, backoff *time.Duration, sent bool, peer string, err error) bool {
	if x.ctx.Err() != nil {
		return false
	}
	if sent {
		*backoff = minBackoff
	}
	x.cfg.Logger.Debug("stream ended; reconnecting", "peer", peer, "err", err, "after", *backoff)
	t := time.NewTimer(*backoff)
	defer t.Stop()
	select {
	case <-x.ctx.Done():
		return false
	case <-t.C:
		*backoff = min(2**backoff, maxBackoff)
	case <-o.retry:
		*backoff = minBackoff
	}
	return true
}

// dialStream opens a stream to p: the upgraded connection, the receiver's positions and the nonce.
func (x *Exchange) dialStream(ctx context.Context, p Peer) (io.ReadWriteCloser, positions, string, error) {
	client := *x.cfg.Client
	client.Timeout = 0 // the stream outlives any request timeout; the handshake has its own
	resp, nonce, err := upgrade(ctx, &client, strings.TrimRight(p.BaseURL, "/")+streamPath, streamPath, x.cfg.Key, x.cfg.Self, x.cfg.Now())
	if err != nil {
		return nil, positions{}, "", err
	}
	conn := resp.Body.(io.ReadWriteCloser)
	var pos positions
	var errs [3]error
	pos.msgs, errs[0] = strconv.ParseInt(resp.Header.Get(headerCursor), 10, 64)
	pos.dels, errs[1] = strconv.ParseInt(resp.Header.Get(headerCursorDeletes), 10, 64)
	pos.reacts, errs[2] = strconv.ParseInt(resp.Header.Get(headerCursorReactions), 10, 64)
	if errors.Join(errs[:]...) != nil || pos.msgs < 0 || pos.dels < 0 || pos.reacts < 0 {
		conn.Close()
		return nil, positions{}, "", errors.New("open stream: no cursors in the answer")
	}
	return conn, pos, nonce, nil
}

// upgrade sends a signed stream request (signer, key) to url and returns the 101 answer, whose
// Body is the connection, and the stream's nonce.
func upgrade(ctx context.Context, client *http.Client, url, pathQuery string, key ed25519.PrivateKey, signer string, now time.Time) (*http.Response, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", streamProtocol)
	sign(req.Header, key, signer, http.MethodGet, pathQuery, nil, now)
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("open stream: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, "", &RefusedError{Status: resp.StatusCode, Body: strings.TrimSpace(string(body))}
	}
	conn, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		resp.Body.Close()
		return nil, "", errors.New("open stream: the upgraded connection is not writable")
	}
	nonce := resp.Header.Get(headerNonce)
	if len(nonce) < 16 || len(nonce) > 64 {
		conn.Close()
		return nil, "", errors.New("open stream: no nonce in the answer")
	}
	return resp, nonce, nil
}

// RefusedError is a stream request the receiver answered with a status other than 101.
type RefusedError struct {
	Status int
	Body   string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("open stream: peer answered %d: %s", e.Status, truncate(e.Body, 200))
}

// frameConn is the sending end of a stream: it signs and writes frames, and its reader goroutine
// reads the acknowledgements, so that a connection the receiver closed shows at once, even while
// the stream is idle (dead).
type frameConn struct {
	conn   io.ReadWriteCloser
	w      *bufio.Writer
	key    ed25519.PrivateKey
	prefix []byte // the signing input's prefix (frameSigningInput with no batch)
	// buf is the signing input of the frame being built: the prefix, then the batch.
	buf  []byte
	acks chan positions
	dead chan struct{} // closed when the reader stops, after readErr is set
	// readErr is why the reader stopped.
	readErr error
}

func newFrameConn(conn io.ReadWriteCloser, key ed25519.PrivateKey, nonce string) *frameConn {
	prefix := frameSigningInput(nonce, nil)
	f := &frameConn{conn: conn, w: bufio.NewWriterSize(conn, 64<<10), key: key, prefix: prefix,
		buf: append([]byte(nil), prefix...), acks: make(chan positions, 1), dead: make(chan struct{})}
	go f.readAcks()
	return f
}

// readAcks reads acknowledgements until the connection fails or closes. An acknowledgement of no
// frame ends the stream.
func (f *frameConn) readAcks() {
	defer close(f.dead)
	var b [ackSize]byte
	for {
		if _, err := io.ReadFull(f.conn, b[:]); err != nil {
			f.readErr = fmt.Errorf("read acknowledgement: %w", err)
			return
		}
		select {
		case f.acks <- positionsOf(b):
		default:
			f.readErr = errors.New("an acknowledgement of no frame")
			f.conn.Close()
			return
		}
	}
}

// closed is the reason the stream's connection is known to have ended.
func (f *frameConn) closed() error {
	<-f.dead
	return f.readErr
}

// batch starts a frame: the returned slice is the prefix, to which the caller appends the batch
// before send.
func (f *frameConn) batch() []byte { return f.buf[:len(f.prefix)] }

// send signs and writes the frame whose signing input is buf, and returns the receiver's
// acknowledgement.
func (f *frameConn) send(buf []byte) (positions, error) {
	f.buf = buf
	sig := ed25519.Sign(f.key, buf)
	var head [4]byte
	binary.BigEndian.PutUint32(head[:], uint32(len(buf)-len(f.prefix)+len(sig)))
	if _, err := f.w.Write(head[:]); err != nil {
		return positions{}, fmt.Errorf("write frame: %w", err)
	}
	f.w.Write(buf[len(f.prefix):]) // a bufio.Writer's error sticks: Flush reports it
	f.w.Write(sig)
	if err := f.w.Flush(); err != nil {
		return positions{}, fmt.Errorf("write frame: %w", err)
	}
	t := time.NewTimer(streamAckTimeout)
	defer t.Stop()
	select {
	case ack := <-f.acks:
		return ack, nil
	case <-f.dead:
		return positions{}, f.readErr
	case <-t.C:
		f.conn.Close()
		return positions{}, errors.New("no acknowledgement in time")
	}
}

// heartbeatTimer is a stream's heartbeat, restarted after every frame.
type heartbeatTimer struct{ *time.Timer }

func (h heartbeatTimer) restart() {
	if !h.Stop() {
		select {
		case <-h.C:
		default:
		}
	}
	h.Reset(streamHeartbeat)
}

// runStream sends this node's rows to p over one stream until it fails. sent reports whether any
// frame was acknowledged.
func (x *Exchange) runStream(p Peer, o *outbox) (sent bool, err error) {
	ctx, cancel := context.WithCancel(x.ctx)
	defer cancel()
	conn, pos, nonce, err := x.dialStreamCancellable(ctx, cancel, p)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	o.live.Store(true)
	defer o.live.Store(false)
	self := Name(x.cfg.Self)
	fc := newFrameConn(conn, x.cfg.Key, nonce)
	heartbeat := heartbeatTimer{time.NewTimer(streamHeartbeat)}
	defer heartbeat.Stop()
	load := func(ctx context.Context, after, through int64, limit int) ([]eventstore.Message, error) {
		if lister, ok := x.cfg.Store.(seqLister); ok {
			rows, ok, err := x.window.fromPublished(ctx, lister, self, after, through, limit)
			if ok || err != nil {
				return rows, err
			}
		}
		return x.cfg.Store.OriginThrough(ctx, self, after, through, limit)
	}
	// The first read, and the one at each heartbeat, take every durable row (rows stored before
	// this process started, or not published); the others only rows Publish said are durable, so
	// they never wait for the log's next sync, and come through the window shared by every
	// stream. The deletes and reactions logs are read only when they have new rows, at the first
	// read and at the heartbeat.
	everything, beat := true, false
	o.dels.Store(true)
	o.reacts.Store(true)
	for {
		var encs [][]byte
		last := pos.msgs
		if o.rescan.Swap(false) {
			everything = true
		}
		o.msgs.Store(false)
		if everything {
			var rows []eventstore.Message
			rows, err = x.cfg.Store.OriginAfter(ctx, self, pos.msgs, x.cfg.PageSize)
			for i := range rows {
				encs = append(encs, encodeRow(rows[i]))
				last = rows[i].Seq
			}
		} else if through := x.durable.Load(); through > pos.msgs {
			encs, last, err = x.window.read(ctx, pos.msgs, through, x.cfg.PageSize, load)
		}
		if err != nil {
			return sent, fmt.Errorf("read outbox: %w", err)
		}
		everything = false
		logs := streamBatch{Dels: span{pos.dels, pos.dels}, Reacts: span{pos.reacts, pos.reacts}}
		var more logFlags
		if err := x.collectLogs(ctx, o, &logs, &more, 2*x.cfg.PageSize, func(eventstore.Deletion) bool { return true },
			func(eventstore.ReactionEvent) bool { return true }); err != nil {
			return sent, err
		}
		if len(encs) == 0 && len(logs.Deletions) == 0 && len(logs.Reactions) == 0 && !beat {
			select {
			case <-ctx.Done():
				return sent, ctx.Err()
			case <-fc.dead:
				return sent, fc.closed()
			case <-o.wake:
			case <-heartbeat.C: // an empty frame: the peer's read does not time out, a dead link shows
				everything, beat = true, true
				o.mark(true, true, true)
			}
			continue
		}
		beat = false
		if x.cfg.BeforeFrame != nil {
			x.cfg.BeforeFrame()
		}
		buf := appendBatchHead(fc.batch(), pos.msgs, last, len(encs))
		for _, e := range encs {
			buf = append(buf, e...)
		}
		ack, err := fc.send(appendLogs(buf, logs))
		if err != nil {
			return sent, err
		}
		sent = true
		pos.msgs = last
		// A log whose page was full and taken has more to read; one that stopped short waits on
		// the peer for a message from another origin: it is read again when it has a new row, or
		// at the heartbeat.
		if ack.dels >= logs.Dels.Last && more.dels {
			o.dels.Store(true)
		}
		if ack.reacts >= logs.Reacts.Last && more.reacts {
			o.reacts.Store(true)
		}
		pos.dels, pos.reacts = max(pos.dels, ack.dels), max(pos.reacts, ack.reacts)
		x.framesSent.Add(1)
		heartbeat.restart()
	}
}

// dialStreamCancellable dials with a handshake bound: if the answer takes longer than 10 s, the
// stream's context is cancelled.
func (x *Exchange) dialStreamCancellable(ctx context.Context, cancel context.CancelFunc, p Peer) (io.ReadWriteCloser, positions, string, error) {
	t := time.AfterFunc(10*time.Second, cancel)
	conn, pos, nonce, err := x.dialStream(ctx, p)
	if !t.Stop() && err == nil {
		conn.Close()
		return nil, positions{}, "", errors.New("open stream: handshake timed out")
	}
	return conn, pos, nonce, err
}

// serveStream is the receiving end of a peer's stream.
func (x *Exchange) serveStream(c *gin.Context) {
	signer, ok := x.signedGet(c)
	if !ok {
		return
	}
	if !strings.EqualFold(c.GetHeader("Upgrade"), streamProtocol) {
		c.JSON(http.StatusBadRequest, gin.H{"error": "Upgrade: " + streamProtocol + " required"})
		return
	}
	tag, _ := signing.ParseSigTag(c.Request.Header.Get(headerSignature)) // verified above
	pub, _ := x.cfg.Keys(signer, tag.KID)
	origin := Name(signer)
	var pos positions
	var errs [3]error
	pos.msgs, errs[0] = ReadCursor(c.Request.Context(), x.cfg.Store, inCursor(origin, LogMessages))
	pos.dels, errs[1] = ReadCursor(c.Request.Context(), x.cfg.Store, inCursor(origin, LogDeletes))
	pos.reacts, errs[2] = ReadCursor(c.Request.Context(), x.cfg.Store, inCursor(origin, LogReactions))
	if errors.Join(errs[:]...) != nil {
		c.JSON(http.StatusServiceUnavailable, gin.H{"error": "store unavailable"})
		return
	}
	conn, rw, nonce, ok := x.hijack(c, fmt.Sprintf("%s: %d\r\n%s: %d\r\n%s: %d\r\n", headerCursor, pos.msgs,
		headerCursorDeletes, pos.dels, headerCursorReactions, pos.reacts))
	if !ok {
		return
	}
	defer conn.Close()
	defer x.untrack(conn)
	if err := x.receiveStream(conn, rw.Reader, signer, pub, nonce, pos); err != nil && x.ctx.Err() == nil {
		x.cfg.Logger.Debug("stream from peer ended", "peer", signer, "err", err)
	}
}

// hijack answers a stream request with 101 (and the extra header lines) and takes over its
// connection, tracked so that Close ends it; it returns the stream's fresh nonce.
func (x *Exchange) hijack(c *gin.Context, headers string) (net.Conn, *bufio.ReadWriter, string, bool) {
	conn, rw, nonce, err := acceptStream(c.Writer, headers, x.track)
	if err != nil {
		if conn == nil && !errors.Is(err, errClosing) {
			c.JSON(http.StatusInternalServerError, gin.H{"error": err.Error()})
		}
		return nil, nil, "", false
	}
	return conn, rw, nonce, true
}

var errClosing = errors.New("the exchange is closing")

// acceptStream answers a stream request with 101 (and the extra header lines) and takes over its
// connection, which track records (false: refused, closing); it returns the stream's fresh
// nonce. An error with no connection is one to answer with 500.
func acceptStream(w http.ResponseWriter, headers string, track func(net.Conn) bool) (net.Conn, *bufio.ReadWriter, string, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, nil, "", fmt.Errorf("nonce: %w", err)
	}
	nonce := hex.EncodeToString(raw[:])
	h, ok := w.(http.Hijacker)
	if !ok {
		return nil, nil, "", errors.New("cannot take over the connection")
	}
	conn, rw, err := h.Hijack()
	if err != nil {
		return nil, nil, "", errors.New("cannot take over the connection")
	}
	if !track(conn) {
		conn.Close()
		return nil, nil, "", errClosing
	}
	conn.SetDeadline(time.Time{})
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n%s%s: %s\r\n\r\n",
		streamProtocol, headers, headerNonce, nonce)
	if err := rw.Flush(); err != nil {
		conn.Close()
		return conn, nil, "", err
	}
	return conn, rw, nonce, nil
}

// frameReader is the receiving end of a stream: it reads frames and checks their signatures.
type frameReader struct {
	conn   net.Conn
	r      *bufio.Reader
	pub    ed25519.PublicKey
	prefix []byte
	buf    []byte // the signing input followed by the signature: the prefix, then the frame
	max    uint32 // the largest frame read
}

func newFrameReader(conn net.Conn, r *bufio.Reader, pub ed25519.PublicKey, nonce string, max uint32) *frameReader {
	return &frameReader{conn: conn, r: r, pub: pub, prefix: frameSigningInput(nonce, nil), max: max}
}

// body reads the frame of n bytes whose length was read, checks its signature and decodes it.
func (f *frameReader) body(n uint32) (streamBatch, error) {
	if n < ed25519.SignatureSize+1 || n > f.max {
		return streamBatch{}, fmt.Errorf("frame of %d bytes", n)
	}
	if cap(f.buf) < len(f.prefix)+int(n) {
		f.buf = make([]byte, len(f.prefix)+int(n))
		copy(f.buf, f.prefix)
	}
	f.buf = f.buf[:len(f.prefix)+int(n)]
	f.conn.SetReadDeadline(time.Now().Add(streamReadIdle))
	if _, err := io.ReadFull(f.r, f.buf[len(f.prefix):]); err != nil {
		return streamBatch{}, err
	}
	signed, sig := f.buf[:len(f.buf)-ed25519.SignatureSize], f.buf[len(f.buf)-ed25519.SignatureSize:]
	if !ed25519.Verify(f.pub, signed, sig) {
		return streamBatch{}, errors.New("frame signature does not verify")
	}
	return decodeBatch(signed[len(f.prefix):])
}

// ack answers a frame with the receiver's positions.
func (f *frameReader) ack(p positions) error {
	b := p.ack()
	f.conn.SetWriteDeadline(time.Now().Add(streamAckTimeout))
	_, err := f.conn.Write(b[:])
	return err
}

// receiveStream stores the frames of one stream from signer until it ends. The messages cursor
// is written lazily: at most every cursorEvery while frames keep coming, as soon as the stream
// pauses, and when it ends. A cursor that lags only means rows sent again (and dropped as
// duplicates) after a reconnect; it never passes a row that is not stored. The deletes and
// reactions cursors are written as soon as they move.
func (x *Exchange) receiveStream(conn net.Conn, r *bufio.Reader, signer string, pub ed25519.PublicKey, nonce string, pos positions) error {
	defer x.streamOpen(signer, LogMessages, LogDeletes, LogReactions)()
	origin := Name(signer)
	saved, savedAt := pos.msgs, time.Now()
	save := func(ctx context.Context) error {
		if pos.msgs <= saved {
			return nil
		}
		if err := WriteCursor(ctx, x.cfg.Store, inCursor(origin, LogMessages), pos.msgs); err != nil {
			return err
		}
		saved, savedAt = pos.msgs, time.Now()
		return nil
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := save(ctx); err != nil {
			x.cfg.Logger.Debug("saving a stream's cursor at its end", "peer", signer, "err", err)
		}
	}()
	fr := newFrameReader(conn, r, pub, nonce, maxFrame)
	var head [4]byte
	for {
		if err := x.readHead(conn, r, head[:], pos.msgs > saved, save); err != nil {
			return err
		}
		b, err := fr.body(binary.BigEndian.Uint32(head[:]))
		if err != nil {
			return err
		}
		x.heard(signer)
		if _, err := x.store(x.ctx, signer, Batch{Origin: signer, Events: b.Events}); err != nil {
			return err
		}
		// Everything through b.After was stored before (pos), and the frame holds every row of
		// the origin in (After, Last]: the cursor may move to Last.
		if b.After <= pos.msgs && b.Last > pos.msgs {
			pos.msgs = b.Last
			x.streamed(signer, pos.msgs)
		}
		if time.Since(savedAt) >= cursorEvery {
			if err := save(x.ctx); err != nil {
				return err
			}
		}
		if err := x.applyLog(origin, LogDeletes, &pos.dels, b.Dels, len(b.Deletions), func() (int64, int64, error) {
			last, err := x.applyDeletions(x.ctx, signer, origin, b.Deletions)
			return last, b.Deletions[len(b.Deletions)-1].Seq, err
		}); err != nil {
			return err
		}
		if err := x.applyLog(origin, LogReactions, &pos.reacts, b.Reacts, len(b.Reactions), func() (int64, int64, error) {
			last, err := x.applyReactions(x.ctx, signer, origin, b.Reactions)
			return last, b.Reactions[len(b.Reactions)-1].Seq, err
		}); err != nil {
			return err
		}
		if err := fr.ack(pos); err != nil {
			return err
		}
	}
}

// applyLog applies a section s of n records of origin's log l (apply: the seq of the last record
// taken and of the last record) and moves this node's cursor over that log: to s.Last when all
// of it was taken, else to the last record taken, and only when the section follows what this
// node had (s.After <= *pos).
func (x *Exchange) applyLog(origin string, l Log, pos *int64, s span, n int, apply func() (applied, lastRecord int64, err error)) error {
	if n == 0 {
		return nil
	}
	applied, lastRecord, err := apply()
	if err != nil {
		return err
	}
	if s.After > *pos {
		return nil
	}
	to := applied
	if applied >= lastRecord {
		to = s.Last
	}
	if to <= *pos {
		return nil
	}
	if err := WriteCursor(x.ctx, x.cfg.Store, inCursor(origin, l), to); err != nil {
		return err
	}
	*pos = to
	return nil
}

// cursorEvery is how often a busy stream's receiver writes its cursor.
const cursorEvery = 100 * time.Millisecond

// readHead reads a frame's length. With a cursor to save it waits cursorEvery for the frame
// first, and saves the cursor if the stream paused.
func (x *Exchange) readHead(conn net.Conn, r *bufio.Reader, head []byte, unsaved bool, save func(context.Context) error) error {
	got := 0
	if unsaved {
		conn.SetReadDeadline(time.Now().Add(cursorEvery))
		k, err := io.ReadFull(r, head)
		got = k
		if err == nil {
			return nil
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			return err
		}
		if err := save(x.ctx); err != nil {
			return err
		}
	}
	conn.SetReadDeadline(time.Now().Add(streamReadIdle))
	_, err := io.ReadFull(r, head[got:])
	return err
}

// track records a stream's connection so that Close ends it; false when the exchange is closed.
func (x *Exchange) track(c net.Conn) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ctx.Err() != nil {
		return false
	}
	x.conns[c] = struct{}{}
	return true
}

func (x *Exchange) untrack(c net.Conn) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.conns, c)
}

// streamedThrough is the origin seq through which streams from origin stored every row (0: none).
func (x *Exchange) streamedThrough(origin string) int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.through[origin]
}

// streamed records that a stream from origin stored every row through seq.
func (x *Exchange) streamed(origin string, seq int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.through[origin] = max(x.through[origin], seq)
}

// closeStreams ends every stream this node receives.
func (x *Exchange) closeStreams() {
	x.mu.Lock()
	defer x.mu.Unlock()
	for c := range x.conns {
		c.Close()
	}
}
