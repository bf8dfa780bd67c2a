package transport

import (
	"errors"
	"net"
)

// MaxLineBytes is the longest IRC line accepted, including its CRLF.
const MaxLineBytes = 8192

// maxDrainBytes bounds how much of an over-long line is read and discarded
// before the connection is given up as a flood.
const maxDrainBytes = 1 << 20

// Transport kinds reported by Conn.Kind.
const (
	KindTCP       = "tcp"
	KindTLS       = "tls"
	KindWebSocket = "websocket"
)

// ErrLineTooLong is returned by Conn.ReadLine for a line over MaxLineBytes.
// The line has been discarded; the next ReadLine continues with the
// following line (IRC numeric 417).
var ErrLineTooLong = errors.New("transport: input line too long")

// ErrInputFlood is wrapped by the fatal error ReadLine returns when an
// over-long line goes on for more than 1 MiB without a line end. The
// connection cannot be resynchronized and should be closed.
var ErrInputFlood = errors.New("transport: over-long line exceeded the drain limit")

// ErrInvalidText is wrapped by the fatal error ReadLine returns when a
// WebSocket text message is not valid UTF-8; the connection was closed with
// status 1007 as RFC 6455 §8.1 asks.
var ErrInvalidText = errors.New("transport: websocket text message is not valid UTF-8")

// Conn is one client connection, whatever its transport.
//
// ReadLine must be called from one goroutine at a time. WriteLines and Close
// may be called from any goroutine, concurrently with each other and with
// ReadLine.
type Conn interface {
	// ReadLine returns the next line without its CR/LF. The slice is only
	// valid until the next call. It returns ErrLineTooLong for a line over
	// MaxLineBytes (and the next call reads the following line), io.EOF once
	// the connection is closed, and any other error as fatal.
	ReadLine() ([]byte, error)
	// WriteLines writes each element as one line; every element is a
	// complete line including its trailing "\r\n". WriteLines does not
	// modify lines or keep references to them after it returns.
	WriteLines(lines [][]byte) error
	// Close closes the connection; later calls return nil or a closed error.
	Close() error
	// RemoteAddr is the client's address.
	RemoteAddr() net.Addr
	// Kind is "tcp", "tls" or "websocket".
	Kind() string
}

// TryWriter is a Conn that can also write without waiting. TryWrite writes what of p the
// connection accepts at once — all of it, a prefix, or nothing (0 when its buffer is full, or
// when the connection cannot write without waiting at all) — and returns how many bytes that
// was; it never blocks on the peer, so a caller that serves many connections can write to one
// without being held up by it. The caller writes the rest (p[n:]) with WriteLines later, and
// must not call WriteLines concurrently with TryWrite if it cares about order. An error is
// fatal for the connection.
type TryWriter interface {
	TryWrite(p []byte) (int, error)
}
