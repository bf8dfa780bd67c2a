package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
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
	// readBuf holds the current line; one byte more than MaxLineBytes tells
	// an over-long message apart.
	readBuf []byte
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
	return &wsConn{
		ctx:     ctx,
		ws:      c,
		remote:  remote,
		framing: framing,
		readBuf: make([]byte, initialLineBuffer),
	}
}

func (w *wsConn) ReadLine() ([]byte, error) {
	typ, r, err := w.ws.Reader(w.ctx)
	if err != nil {
		return nil, w.readError(err)
	}
	// The buffer starts small and grows, doubling up to the line limit, only for a long message;
	// the previous line is no longer in use, so a grown buffer is given back here.
	if len(w.readBuf) > initialLineBuffer {
		w.readBuf = make([]byte, initialLineBuffer)
	}
	n := 0
	for {
		// io.ReadFull returns the bare sentinels only when the message ended;
		// a connection that breaks mid-message gives a wrapped error instead,
		// hence == rather than errors.Is here and below.
		m, err := io.ReadFull(r, w.readBuf[n:])
		n += m
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			if typ == websocket.MessageText && !utf8.Valid(w.readBuf[:n]) {
				return nil, w.failInvalidText()
			}
			return trimLineEnd(w.readBuf[:n]), nil
		case err != nil:
			return nil, w.readError(err)
		}
		if len(w.readBuf) > MaxLineBytes {
			break
		}
		grown := make([]byte, min(2*len(w.readBuf), MaxLineBytes+1))
		copy(grown, w.readBuf[:n])
		w.readBuf = grown
	}
	// The message filled the buffer: discard the rest of it, at most up to
	// a total of 1 MiB.
	rest := int64(maxDrainBytes - len(w.readBuf))
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
