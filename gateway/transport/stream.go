package transport

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// maxRetainedScratch is the largest coalescing buffer a connection keeps
// between writes; a bigger one is dropped after use.
const maxRetainedScratch = 64 << 10

// maxRetainedLines is the largest batch whose slice of line headers a
// connection keeps for its next vectored write.
const maxRetainedLines = 64

// streamConn is a Conn over a byte stream (plain TCP or TLS).
type streamConn struct {
	conn  net.Conn
	kind  string
	lines *lineReader

	// writeMu serializes writers and guards the scratch buffers. Close never
	// takes it: closing the socket is what unblocks a stuck writer.
	writeMu  sync.Mutex
	vec      net.Buffers
	coalesce []byte
	vectored bool

	closeOnce sync.Once
	closeErr  error
}

// NewStreamConn wraps a TCP or TLS connection; kind is "tcp" or "tls".
//
// Writes to a *net.TCPConn or *net.UnixConn are one vectored write
// (writev through net.Buffers). Other connections (TLS, net.Pipe) do not
// support vectored writes, so each batch is copied into one buffer and
// written at once, which keeps a TLS batch in as few records as possible.
func NewStreamConn(c net.Conn, kind string) Conn {
	vectored := false
	switch c.(type) {
	case *net.TCPConn, *net.UnixConn:
		vectored = true
	}
	return &streamConn{
		conn:     c,
		kind:     kind,
		lines:    newLineReader(c, MaxLineBytes, maxDrainBytes),
		vectored: vectored,
	}
}

func (s *streamConn) ReadLine() ([]byte, error) {
	line, err := s.lines.readLine()
	if err == nil || errors.Is(err, ErrLineTooLong) || errors.Is(err, ErrInputFlood) {
		return line, err
	}
	// A peer that drops a TLS connection without close_notify ends it with
	// io.ErrUnexpectedEOF; that is still just the end of the connection.
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return nil, io.EOF
	}
	return nil, fmt.Errorf("transport: read %s from %s: %w", s.kind, s.conn.RemoteAddr(), err)
}

func (s *streamConn) WriteLines(lines [][]byte) error {
	if len(lines) == 0 {
		return nil
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var err error
	if s.vectored {
		err = s.writeVectored(lines)
	} else {
		err = s.writeCoalesced(lines)
	}
	if err != nil {
		return fmt.Errorf("transport: write %s to %s: %w", s.kind, s.conn.RemoteAddr(), err)
	}
	return nil
}

// writeVectored sends the batch with one writev, or a single line with one
// write (no slice header escapes to the heap for it). net.Buffers.WriteTo
// consumes the slice it is given, so it works on a private copy of the
// slice headers, never on the caller's; a copy longer than
// maxRetainedLines is dropped after use, so one burst (a NAMES list, a
// history replay) does not stay with an idle connection.
func (s *streamConn) writeVectored(lines [][]byte) error {
	if len(lines) == 1 {
		_, err := s.conn.Write(lines[0])
		return err
	}
	s.vec = append(s.vec[:0], lines...)
	bufs := s.vec
	_, err := bufs.WriteTo(s.conn)
	clear(s.vec)
	if len(lines) > maxRetainedLines {
		s.vec = nil
	}
	return err
}

func (s *streamConn) writeCoalesced(lines [][]byte) error {
	buf := s.coalesce[:0]
	for _, line := range lines {
		buf = append(buf, line...)
	}
	_, err := s.conn.Write(buf)
	if cap(buf) <= maxRetainedScratch {
		s.coalesce = buf[:0]
	} else {
		s.coalesce = nil
	}
	return err
}

func (s *streamConn) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.conn.Close() })
	return s.closeErr
}

func (s *streamConn) RemoteAddr() net.Addr { return s.conn.RemoteAddr() }

func (s *streamConn) Kind() string { return s.kind }
