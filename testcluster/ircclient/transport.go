package ircclient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// writeTimeout bounds one Send so a server that stops reading cannot hang
// the caller forever.
const writeTimeout = 30 * time.Second

// wsReadLimit is the largest WebSocket frame read; a frame holding a line
// over ircmsg.MaxLineBytes is reported as ErrLineTooLong, not as a broken
// connection.
const wsReadLimit = 1 << 20

// ErrLineTooLong reports a received line longer than ircmsg.MaxLineBytes.
// The line is dropped and reading can continue.
var ErrLineTooLong = errors.New("ircclient: received line exceeds the maximum line length")

// transport moves whole lines. WebSocket is message-based, so it is not
// hidden behind net.Conn.
type transport interface {
	// readLine returns the next line without its line ending. A
	// non-fatal error (ErrLineTooLong) may be followed by more lines.
	readLine() (string, error)
	writeLine(line string) error
	close() error
}

// streamTransport carries CRLF-terminated lines over TCP or TLS.
type streamTransport struct {
	conn    net.Conn
	reader  *bufio.Reader
	pending []byte
	wbuf    []byte // guarded by the Client's write mutex
}

func newStreamTransport(conn net.Conn) *streamTransport {
	return &streamTransport{conn: conn, reader: bufio.NewReaderSize(conn, 16<<10)}
}

func (t *streamTransport) readLine() (string, error) {
	t.pending = t.pending[:0]
	tooLong := false
	for {
		chunk, err := t.reader.ReadSlice('\n')
		if !tooLong {
			t.pending = append(t.pending, chunk...)
			if len(t.pending) > ircmsg.MaxLineBytes {
				tooLong = true
				t.pending = t.pending[:0]
			}
		}
		switch {
		case err == nil:
			if tooLong {
				return "", ErrLineTooLong
			}
			return trimLineEnding(string(t.pending)), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(t.pending) > 0 && !tooLong:
			// A last line without CRLF before the close: deliver it; the
			// next read reports EOF.
			return trimLineEnding(string(t.pending)), nil
		default:
			return "", normalizeReadError(err)
		}
	}
}

func (t *streamTransport) writeLine(line string) error {
	t.wbuf = append(append(t.wbuf[:0], line...), '\r', '\n')
	if err := t.conn.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return err
	}
	_, err := t.conn.Write(t.wbuf)
	return err
}

func (t *streamTransport) close() error { return t.conn.Close() }

// wsTransport carries one IRC line per WebSocket text frame, without CRLF.
type wsTransport struct {
	conn   *websocket.Conn
	queued []string // lines left over from a frame holding several
}

func newWSTransport(conn *websocket.Conn) *wsTransport {
	conn.SetReadLimit(wsReadLimit)
	return &wsTransport{conn: conn}
}

func (t *wsTransport) readLine() (string, error) {
	for len(t.queued) == 0 {
		_, data, err := t.conn.Read(context.Background())
		if err != nil {
			return "", normalizeReadError(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if line = trimLineEnding(line); line != "" {
				t.queued = append(t.queued, line)
			}
		}
	}
	line := t.queued[0]
	t.queued = t.queued[1:]
	if len(line)+2 > ircmsg.MaxLineBytes {
		return "", ErrLineTooLong
	}
	return line, nil
}

func (t *wsTransport) writeLine(line string) error {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	return t.conn.Write(ctx, websocket.MessageText, []byte(line))
}

func (t *wsTransport) close() error {
	err := t.conn.Close(websocket.StatusNormalClosure, "")
	if errors.Is(err, net.ErrClosed) || websocket.CloseStatus(err) != -1 {
		return nil
	}
	return err
}

func trimLineEnding(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return strings.TrimSuffix(s, "\r")
}

// normalizeReadError reports an orderly close by either side as io.EOF.
func normalizeReadError(err error) error {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return io.EOF
	case websocket.CloseStatus(err) == websocket.StatusNormalClosure,
		websocket.CloseStatus(err) == websocket.StatusGoingAway:
		return io.EOF
	}
	return fmt.Errorf("ircclient: read: %w", err)
}
