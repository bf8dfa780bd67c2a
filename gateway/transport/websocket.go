package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// IRCv3 WebSocket subprotocols (https://ircv3.net/specs/extensions/websocket).
const (
	SubprotocolText   = "text.ircv3.net"
	SubprotocolBinary = "binary.ircv3.net"
)

// wsConn is a Conn over a WebSocket: one message is one line.
type wsConn struct {
	ctx     context.Context
	ws      *websocket.Conn
	remote  net.Addr
	framing wsFraming
	// sock is the connection beneath the library when the WebSocket was accepted by
	// AcceptWebSocket, nil after NewWebSocketConn.
	sock *wsSocket
	// buf holds the current line; one byte more than MaxLineBytes tells an over-long message
	// apart. It is lent, a pooled buffer, until the line is consumed, or a larger one for a long
	// line; between lines there is none.
	buf  []byte
	lent *[]byte

	// The handoff to the goroutine that reads a message (see ReadLine).
	readOff func() // w.readOffReader, bound once
	line    []byte
	readErr error
	read    sync.WaitGroup
}

// wsFraming says which message type outgoing lines use.
type wsFraming int

const (
	// framingAuto sends text when the line is valid UTF-8 and binary
	// otherwise, so a browser never fails the connection on a text frame
	// with invalid UTF-8.
	framingAuto wsFraming = iota
	// framingText (text.ircv3.net) always sends text, replacing invalid
	// UTF-8 with U+FFFD as the IRCv3 specification asks.
	framingText
	// framingBinary (binary.ircv3.net) always sends binary.
	framingBinary
)

// NewWebSocketConn wraps an accepted WebSocket. ctx bounds every read and
// write: cancelling it closes the connection. remote is the client address
// (the HTTP layer knows it, the WebSocket does not).
//
// Each incoming text or binary message is one line; a trailing "\r\n" is
// removed. A text message that is not valid UTF-8 closes the connection
// with status 1007 and ReadLine returns an error wrapping ErrInvalidText
// (binary messages carry any bytes). A message over MaxLineBytes is discarded and ReadLine returns
// ErrLineTooLong; one over 1 MiB closes the connection. Outgoing lines are
// sent one message each without their CRLF, as text or binary according to
// the negotiated IRCv3 subprotocol (text when valid UTF-8 if none).
//
// Close performs the WebSocket close handshake, which can take up to ten
// seconds against an unresponsive peer.
func NewWebSocketConn(ctx context.Context, c *websocket.Conn, remote net.Addr) Conn {
	return newWebSocketConn(ctx, c, remote, nil)
}

// AcceptWebSocket upgrades r to a WebSocket offering the IRCv3 subprotocols and returns it as a
// Conn that behaves as NewWebSocketConn describes. opts (may be nil) is passed to
// websocket.Accept with the subprotocols set; on an error the response has been written.
//
// A connection accepted here costs little while it idles: the library's buffers are tiny, input
// and output are buffered only while in flight (see wsSocket), and the goroutine calling ReadLine,
// when the connection has a raw socket, waits for input outside the library with a short call
// chain, reading each message on a short-lived goroutine, so it keeps the runtime's smallest
// stack (benchmark B1).
func AcceptWebSocket(ctx context.Context, w http.ResponseWriter, r *http.Request, remote net.Addr, opts *websocket.AcceptOptions) (Conn, error) {
	var o websocket.AcceptOptions
	if opts != nil {
		o = *opts
	}
	o.Subprotocols = []string{SubprotocolText, SubprotocolBinary}
	h := &wsHijacker{ResponseWriter: w}
	ws, err := websocket.Accept(h, r, &o)
	if err != nil {
		return nil, fmt.Errorf("transport: accept websocket from %s: %w", remote, err)
	}
	return newWebSocketConn(ctx, ws, remote, h.sock), nil
}

func newWebSocketConn(ctx context.Context, c *websocket.Conn, remote net.Addr, sock *wsSocket) *wsConn {
	// ReadLine enforces the 1 MiB drain cap itself; the library's limit,
	// which closes the connection, is only a backstop above it.
	c.SetReadLimit(2 * maxDrainBytes)
	framing := framingAuto
	switch c.Subprotocol() {
	case SubprotocolText:
		framing = framingText
	case SubprotocolBinary:
		framing = framingBinary
	}
	w := &wsConn{
		ctx:     ctx,
		ws:      c,
		remote:  remote,
		framing: framing,
		sock:    sock,
	}
	w.readOff = w.readOffReader
	return w
}

// ReadLine returns the next message. With a raw socket beneath (AcceptWebSocket), the calling
// goroutine, usually the connection's long-lived reader, waits here for input and never enters
// the library: reading a message goes deep (the library's frame reader, bufio, the socket), which
// would grow the reader's stack for good, so a short-lived goroutine reads it while the reader
// waits.
func (w *wsConn) ReadLine() ([]byte, error) {
	w.releaseLine()
	if w.sock == nil || w.sock.waiter == nil {
		return w.readMessage()
	}
	if w.sock.inputIdle() {
		if err := w.sock.waiter.awaitInput(); err != nil {
			return nil, w.readError(err)
		}
	}
	w.read.Add(1)
	go w.readOff()
	w.read.Wait()
	return w.line, w.readErr
}

func (w *wsConn) readOffReader() {
	defer w.read.Done()
	w.line, w.readErr = w.readMessage()
}

// releaseLine gives the previous line's buffer back to the pool.
func (w *wsConn) releaseLine() {
	if w.lent != nil && len(w.buf) == initialLineBuffer {
		readBufs.Put(w.lent)
	}
	w.buf, w.lent, w.line = nil, nil, nil
}

// readMessage reads one message into a pooled buffer (a larger one for a long message).
func (w *wsConn) readMessage() ([]byte, error) {
	typ, r, err := w.ws.Reader(w.ctx)
	if err != nil {
		return nil, w.readError(err)
	}
	// The buffer starts small and grows, doubling up to the line limit, only for a long message.
	w.lent = readBufs.Get().(*[]byte)
	w.buf = *w.lent
	n := 0
	for {
		// io.ReadFull returns the bare sentinels only when the message ended;
		// a connection that breaks mid-message gives a wrapped error instead,
		// hence == rather than errors.Is here and below.
		m, err := io.ReadFull(r, w.buf[n:])
		n += m
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			if typ == websocket.MessageText && !utf8.Valid(w.buf[:n]) {
				return nil, w.failInvalidText()
			}
			return trimLineEnd(w.buf[:n]), nil
		case err != nil:
			return nil, w.readError(err)
		}
		if len(w.buf) > MaxLineBytes {
			break
		}
		grown := make([]byte, min(2*len(w.buf), MaxLineBytes+1))
		copy(grown, w.buf[:n])
		w.buf = grown
	}
	// The message filled the buffer: discard the rest of it, at most up to
	// a total of 1 MiB.
	rest := int64(maxDrainBytes - len(w.buf))
	skipped, err := io.CopyN(io.Discard, r, rest+1)
	switch {
	case skipped > rest:
		return nil, fmt.Errorf("transport: websocket message from %s over %d bytes: %w", w.remote, maxDrainBytes, ErrInputFlood)
	case err == io.EOF:
		return nil, ErrLineTooLong
	default:
		return nil, w.readError(err)
	}
}

// failInvalidText closes the connection with 1007 (invalid frame payload
// data) after a text message that is not UTF-8.
func (w *wsConn) failInvalidText() error {
	_ = w.ws.Close(websocket.StatusInvalidFramePayloadData, "text message is not valid UTF-8")
	return fmt.Errorf("transport: websocket from %s: %w", w.remote, ErrInvalidText)
}

// readError maps the ways a WebSocket ends to io.EOF and wraps the rest.
func (w *wsConn) readError(err error) error {
	if websocket.CloseStatus(err) != -1 || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.Canceled) {
		return io.EOF
	}
	return fmt.Errorf("transport: read websocket from %s: %w", w.remote, err)
}

func (w *wsConn) WriteLines(lines [][]byte) error {
	for _, line := range lines {
		typ, payload := w.frame(trimLineEnd(line))
		if err := w.ws.Write(w.ctx, typ, payload); err != nil {
			return fmt.Errorf("transport: write websocket to %s: %w", w.remote, err)
		}
	}
	return nil
}

// frame picks the message type for one line and, for text.ircv3.net, makes
// the payload valid UTF-8.
func (w *wsConn) frame(line []byte) (websocket.MessageType, []byte) {
	switch w.framing {
	case framingBinary:
		return websocket.MessageBinary, line
	case framingText:
		if !utf8.Valid(line) {
			line = bytes.ToValidUTF8(line, []byte("\uFFFD"))
		}
		return websocket.MessageText, line
	default:
		if utf8.Valid(line) {
			return websocket.MessageText, line
		}
		return websocket.MessageBinary, line
	}
}

func (w *wsConn) Close() error {
	err := w.ws.Close(websocket.StatusNormalClosure, "")
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("transport: close websocket to %s: %w", w.remote, err)
	}
	return nil
}

func (w *wsConn) RemoteAddr() net.Addr { return w.remote }

func (w *wsConn) Kind() string { return KindWebSocket }
