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

	"github.com/palaver-chat/palaver/federation/eventstore"
	"github.com/palaver-chat/palaver/federation/signing"
)

// The stream: one long-lived connection per peer carries the messages this node originated, read
// from its durable log (the outbox), to that peer, which stores them and moves its cursor.
//
// The origin opens it with GET /internal/v1/stream (Upgrade: palaver-exchange/1, signed like every
// exchange request). The receiver authenticates the connection's TLS peer and the signature, and
// answers 101 with its cursor for the origin (Palaver-Cursor) and a fresh nonce
// (Palaver-Stream-Nonce); the connection then carries frames one way and acknowledgements the
// other. The origin reads its own rows after the cursor (OriginAfter: only rows it stored
// durably), sends them as one frame, waits for the acknowledgement, and goes on from the last row
// it sent; with nothing left it waits, idle, until this node stores another message (or sends an
// empty frame as a heartbeat every streamHeartbeat). While the receiver stores one frame the rows
// of the next accumulate, so a frame grows with the load (up to PageSize rows): batched by time
// and size without a timer.
//
// A frame is a 4-byte big-endian length, the batch in its binary form (frame.go), and the
// origin's ed25519 signature over "palaver-exchange/1\n<nonce>\n<batch>": one signature per
// batch, bound to this stream; each message keeps its own +freeq.at/sig. The receiver stores a
// frame's events in one durable commit and, when it had stored the origin's rows through the
// frame's after, moves its cursor to the frame's last: a cursor never passes a row that is not
// stored here. It then answers with its position (8 bytes, big-endian). A malformed frame, a bad
// signature or a store failure ends the stream; the origin reconnects (with backoff) and resumes
// from the receiver's cursor. While a stream is healthy its receiver pulls no message rows from
// the origin (pull.go): the pull is the catch-up while the stream is down or silent.
//
// Each peer has its own stream and goroutine, and the queue is the durable log itself: a slow or
// dead peer holds only its own stream, and no memory grows with its backlog.

const (
	streamPath       = "/internal/v1/stream"
	streamProtocol   = "palaver-exchange/1"
	headerCursor     = "Palaver-Cursor"
	headerNonce      = "Palaver-Stream-Nonce"
	streamHeartbeat  = 3 * time.Second
	streamAckTimeout = 30 * time.Second
	streamReadIdle   = 3 * streamHeartbeat
	maxFrame         = 32 << 20
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

// outbox is one peer's stream sender: its goroutine and the signal that new rows were stored.
type outbox struct {
	wake  chan struct{}
	retry chan struct{} // Kick: reconnect now, without waiting out the backoff
	// live is set while the stream is open: it sends every row after the peer's cursor.
	live atomic.Bool
	// rescan has the live stream's next read take every durable row, not only those published
	// (Kick: the stored stream dropped items, so some rows were never published).
	rescan atomic.Bool
}

// streamLive reports whether this node's stream to peer is open.
func (x *Exchange) streamLive(peer string) bool {
	x.mu.Lock()
	o := x.outboxes[peer]
	x.mu.Unlock()
	return o != nil && o.live.Load()
}

// notifyOutboxes tells every peer's stream that this node stored a message, starting the
// stream of a peer that has none yet.
func (x *Exchange) notifyOutboxes() {
	if x.cfg.Peers == nil {
		return
	}
	for _, p := range x.cfg.Peers() {
		o := x.outbox(p.DID)
		select {
		case o.wake <- struct{}{}:
		default:
		}
	}
}

// retryStreams has every stream waiting to reconnect try at once (the peers changed).
func (x *Exchange) retryStreams() {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, o := range x.outboxes {
		o.rescan.Store(true)
		select {
		case o.wake <- struct{}{}:
		default:
		}
		select {
		case o.retry <- struct{}{}:
		default:
		}
	}
}

func (x *Exchange) outbox(did string) *outbox {
	x.mu.Lock()
	defer x.mu.Unlock()
	o, ok := x.outboxes[did]
	if !ok {
		o = &outbox{wake: make(chan struct{}, 1), retry: make(chan struct{}, 1)}
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

// outboxLoop keeps a stream to one peer open while the peer is listed, reconnecting with backoff.
func (x *Exchange) outboxLoop(did string, o *outbox) {
	defer x.wg.Done()
	const minBackoff, maxBackoff = 50 * time.Millisecond, 5 * time.Second
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
		if x.ctx.Err() != nil {
			return
		}
		if sent {
			backoff = minBackoff
		}
		x.cfg.Logger.Debug("stream ended; reconnecting", "peer", did, "err", err, "after", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-x.ctx.Done():
			t.Stop()
			return
		case <-t.C:
			backoff = min(2*backoff, maxBackoff)
		case <-o.retry:
			t.Stop()
			backoff = minBackoff
		}
	}
}

// dialStream opens a stream to p: the upgraded connection, the receiver's cursor and the nonce.
func (x *Exchange) dialStream(ctx context.Context, p Peer) (io.ReadWriteCloser, int64, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(p.BaseURL, "/")+streamPath, nil)
	if err != nil {
		return nil, 0, "", err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", streamProtocol)
	sign(req.Header, x.cfg.Key, x.cfg.Self, http.MethodGet, streamPath, nil, x.cfg.Now())
	client := *x.cfg.Client
	client.Timeout = 0 // the stream outlives any request timeout; the handshake has its own
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, "", fmt.Errorf("open stream: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		resp.Body.Close()
		return nil, 0, "", fmt.Errorf("open stream: peer answered %d", resp.StatusCode)
	}
	conn, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		resp.Body.Close()
		return nil, 0, "", errors.New("open stream: the upgraded connection is not writable")
	}
	cursor, err := strconv.ParseInt(resp.Header.Get(headerCursor), 10, 64)
	nonce := resp.Header.Get(headerNonce)
	if err != nil || cursor < 0 || len(nonce) < 16 || len(nonce) > 64 {
		conn.Close()
		return nil, 0, "", errors.New("open stream: no cursor or nonce in the answer")
	}
	return conn, cursor, nonce, nil
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
	w := bufio.NewWriterSize(conn, 64<<10)
	var ack [8]byte
	heartbeat := time.NewTimer(streamHeartbeat)
	defer heartbeat.Stop()
	var buf []byte
	prefix := frameSigningInput(nonce, nil)
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
	// stream.
	everything := true
	for {
		var encs [][]byte
		last := pos
		if o.rescan.Swap(false) {
			everything = true
		}
		if everything {
			var rows []eventstore.Message
			rows, err = x.cfg.Store.OriginAfter(ctx, self, pos, x.cfg.PageSize)
			for i := range rows {
				encs = append(encs, encodeRow(rows[i]))
				last = rows[i].Seq
			}
		} else if through := x.durable.Load(); through > pos {
			encs, last, err = x.window.read(ctx, pos, through, x.cfg.PageSize, load)
		}
		if err != nil {
			return sent, fmt.Errorf("read outbox: %w", err)
		}
		everything = false
		if len(encs) == 0 {
			select {
			case <-ctx.Done():
				return sent, ctx.Err()
			case <-o.wake:
				continue
			case <-heartbeat.C: // an empty frame: the peer's read does not time out, a dead link shows
				everything = true
			}
		}
		if x.cfg.BeforeFrame != nil {
			x.cfg.BeforeFrame()
		}
		// buf is the signing input (the prefix, then the batch); the frame is its batch part.
		buf = appendBatchHead(append(buf[:0], prefix...), pos, last, len(encs))
		for _, e := range encs {
			buf = append(buf, e...)
		}
		sig := ed25519.Sign(x.cfg.Key, buf)
		var head [4]byte
		binary.BigEndian.PutUint32(head[:], uint32(len(buf)-len(prefix)+len(sig)))
		if _, err := w.Write(head[:]); err != nil {
			return sent, fmt.Errorf("write frame: %w", err)
		}
		w.Write(buf[len(prefix):]) // a bufio.Writer's error sticks: Flush reports it
		w.Write(sig)
		if err := w.Flush(); err != nil {
			return sent, fmt.Errorf("write frame: %w", err)
		}
		deadline := time.AfterFunc(streamAckTimeout, func() { conn.Close() })
		_, err = io.ReadFull(conn, ack[:])
		deadline.Stop()
		if err != nil {
			return sent, fmt.Errorf("read acknowledgement: %w", err)
		}
		sent = true
		pos = last
		if !heartbeat.Stop() {
			select {
			case <-heartbeat.C:
			default:
			}
		}
		heartbeat.Reset(streamHeartbeat)
	}
}

// dialStreamCancellable dials with a handshake bound: if the answer takes longer than 10 s, the
// stream's context is cancelled.
func (x *Exchange) dialStreamCancellable(ctx context.Context, cancel context.CancelFunc, p Peer) (io.ReadWriteCloser, int64, string, error) {
	t := time.AfterFunc(10*time.Second, cancel)
	conn, pos, nonce, err := x.dialStream(ctx, p)
	if !t.Stop() && err == nil {
		conn.Close()
		return nil, 0, "", errors.New("open stream: handshake timed out")
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
	pos, err := ReadCursor(c.Request.Context(), x.cfg.Store, inCursor(origin, LogMessages))
	if err != nil {
		c.JSON(http.StatusServiceUnavailable, gin.H{"error": "store unavailable"})
		return
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		c.JSON(http.StatusInternalServerError, gin.H{"error": "nonce"})
		return
	}
	nonce := hex.EncodeToString(raw[:])
	conn, rw, err := c.Writer.Hijack()
	if err != nil {
		c.JSON(http.StatusInternalServerError, gin.H{"error": "cannot take over the connection"})
		return
	}
	defer conn.Close()
	if !x.track(conn) {
		return
	}
	defer x.untrack(conn)
	conn.SetDeadline(time.Time{})
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n%s: %d\r\n%s: %s\r\n\r\n",
		streamProtocol, headerCursor, pos, headerNonce, nonce)
	if err := rw.Flush(); err != nil {
		return
	}
	if err := x.receiveStream(conn, rw.Reader, signer, pub, nonce, pos); err != nil && x.ctx.Err() == nil {
		x.cfg.Logger.Debug("stream from peer ended", "peer", signer, "err", err)
	}
}

// receiveStream stores the frames of one stream from signer until it ends. The cursor is written
// lazily: at most every cursorEvery while frames keep coming, as soon as the stream pauses, and
// when it ends. A cursor that lags only means rows sent again (and dropped as duplicates) after a
// reconnect; it never passes a row that is not stored.
func (x *Exchange) receiveStream(conn net.Conn, r *bufio.Reader, signer string, pub ed25519.PublicKey, nonce string, pos int64) error {
	defer x.streamOpen(signer, LogMessages)()
	origin := Name(signer)
	saved, savedAt := pos, time.Now()
	save := func(ctx context.Context) error {
		if pos <= saved {
			return nil
		}
		if err := WriteCursor(ctx, x.cfg.Store, inCursor(origin, LogMessages), pos); err != nil {
			return err
		}
		saved, savedAt = pos, time.Now()
		return nil
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := save(ctx); err != nil {
			x.cfg.Logger.Debug("saving a stream's cursor at its end", "peer", signer, "err", err)
		}
	}()
	var head [4]byte
	var ack [8]byte
	var buf []byte
	prefix := frameSigningInput(nonce, nil)
	for {
		if err := x.readHead(conn, r, head[:], pos > saved, save); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(head[:])
		if n < ed25519.SignatureSize+1 || n > maxFrame {
			return fmt.Errorf("frame of %d bytes", n)
		}
		// buf is the signing input followed by the signature: the prefix, then the frame.
		if cap(buf) < len(prefix)+int(n) {
			buf = make([]byte, len(prefix)+int(n))
			copy(buf, prefix)
		}
		buf = buf[:len(prefix)+int(n)]
		conn.SetReadDeadline(time.Now().Add(streamReadIdle))
		if _, err := io.ReadFull(r, buf[len(prefix):]); err != nil {
			return err
		}
		signed, sig := buf[:len(buf)-ed25519.SignatureSize], buf[len(buf)-ed25519.SignatureSize:]
		if !ed25519.Verify(pub, signed, sig) {
			return errors.New("frame signature does not verify")
		}
		x.heard(signer)
		body := signed[len(prefix):]
		b, err := decodeBatch(body)
		if err != nil {
			return err
		}
		if _, err := x.store(x.ctx, Batch{Origin: signer, Events: b.Events}); err != nil {
			return err
		}
		// Everything through b.After was stored before (pos), and the frame holds every row of
		// the origin in (After, Last]: the cursor may move to Last.
		if b.After <= pos && b.Last > pos {
			pos = b.Last
			x.streamed(signer, pos)
		}
		if time.Since(savedAt) >= cursorEvery {
			if err := save(x.ctx); err != nil {
				return err
			}
		}
		binary.BigEndian.PutUint64(ack[:], uint64(pos))
		conn.SetWriteDeadline(time.Now().Add(streamAckTimeout))
		if _, err := conn.Write(ack[:]); err != nil {
			return err
		}
	}
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
