package transport

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// writeBufSize is the size of the buffers a batch of lines is copied into and written from.
const writeBufSize = 16 << 10

// smallWriteBufSize is the size of the buffers used for batches that fit one: most do, and a burst
// of small batches then leaves small buffers, not 16 KiB ones, in the pool until the next GCs.
const smallWriteBufSize = 2 << 10

// writeBufs and smallWriteBufs hold the write buffers between writes, shared by all connections: an
// idle connection keeps no write buffer (nor the iovec array a vectored write would keep in its
// file descriptor). They are package-level because they are caches with no observable state;
// every buffer in them is empty.
var (
	writeBufs = sync.Pool{New: func() any {
		b := make([]byte, 0, writeBufSize)
		return &b
	}}
	smallWriteBufs = sync.Pool{New: func() any {
		b := make([]byte, 0, smallWriteBufSize)
		return &b
	}}
)

// getWriteBuf returns an empty pooled buffer for a batch of about size bytes.
func getWriteBuf(size int) *[]byte {
	if size <= smallWriteBufSize {
		return smallWriteBufs.Get().(*[]byte)
	}
	return writeBufs.Get().(*[]byte)
}

// putWriteBuf empties a buffer from getWriteBuf and gives it back.
func putWriteBuf(bp *[]byte) {
	*bp = (*bp)[:0]
	if cap(*bp) == smallWriteBufSize {
		smallWriteBufs.Put(bp)
	} else {
		writeBufs.Put(bp)
	}
}

// inputWaiter is a source that can wait for input without a buffer (rawReader).
type inputWaiter interface {
	awaitInput() error
}

// streamConn is a Conn over a byte stream (plain TCP or TLS).
type streamConn struct {
	conn   net.Conn
	kind   string
	lines  *lineReader
	waiter inputWaiter // set for a socket read through its RawConn

	// writeMu serializes writers. Close never takes it: closing the socket is what unblocks a
	// stuck writer.
	writeMu sync.Mutex

	closeOnce sync.Once
	closeErr  error
}

// NewStreamConn wraps a TCP or TLS connection; kind is "tcp" or "tls".
//
// A batch of lines is copied into a shared buffer (2 or 16 KiB) and written with one write (a
// longer batch with one write per 16 KiB), which also keeps a TLS batch in as few records as possible.
// A single line is written as it is.
func NewStreamConn(c net.Conn, kind string) Conn { return newStreamConn(c, kind) }

func newStreamConn(c net.Conn, kind string) *streamConn {
	var r io.Reader = c
	var waiter inputWaiter
	switch c.(type) {
	case *net.TCPConn, *net.UnixConn:
		if raw := newRawReader(c); raw != nil {
			r = raw
			waiter = waiterOf(raw)
		}
	}
	return &streamConn{
		conn:   c,
		kind:   kind,
		lines:  newLineReader(r, MaxLineBytes, maxDrainBytes),
		waiter: waiter,
	}
}

func (s *streamConn) ReadLine() ([]byte, error) {
	if s.waiter != nil && s.lines.start == s.lines.end && s.lines.err == nil {
		// An idle connection waits here, and reads what arrived here, not deeper in the line
		// reader: both keep its goroutine's stack shallow (see rawReader).
		s.lines.releaseIdle()
		if err := s.waiter.awaitInput(); err != nil {
			return nil, s.readError(err)
		}
		if err := s.lines.fill(); err != nil {
			return nil, s.readError(err)
		}
	}
	line, err := s.lines.readLine()
	if err != nil {
		return nil, s.readError(err)
	}
	return line, nil
}

// readError maps the end of the stream to io.EOF and wraps other read errors. It is kept out of
// ReadLine so that ReadLine's frame, on the stack of a connection parked in a read, stays small.
func (s *streamConn) readError(err error) error {
	if errors.Is(err, ErrLineTooLong) || errors.Is(err, ErrInputFlood) {
		return err
	}
	// A peer that drops a TLS connection without close_notify ends it with
	// io.ErrUnexpectedEOF; that is still just the end of the connection.
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return io.EOF
	}
	return fmt.Errorf("transport: read %s from %s: %w", s.kind, s.conn.RemoteAddr(), err)
}

func (s *streamConn) WriteLines(lines [][]byte) error {
	if len(lines) == 0 {
		return nil
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var err error
	if len(lines) == 1 {
		_, err = s.conn.Write(lines[0])
	} else {
		err = s.writeBatch(lines)
	}
	if err != nil {
		return fmt.Errorf("transport: write %s to %s: %w", s.kind, s.conn.RemoteAddr(), err)
	}
	return nil
}

// writeBatch copies lines into a pooled buffer, writing it out whenever the next line would not
// fit; a line longer than the buffer is written on its own.
func (s *streamConn) writeBatch(lines [][]byte) error {
	size := 0
	for _, line := range lines {
		size += len(line)
	}
	bp := getWriteBuf(size)
	defer putWriteBuf(bp)
	buf := (*bp)[:0]
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		_, err := s.conn.Write(buf)
		buf = buf[:0]
		return err
	}
	for _, line := range lines {
		if len(buf)+len(line) > cap(buf) {
			if err := flush(); err != nil {
				return err
			}
			if len(line) > cap(buf) {
				if _, err := s.conn.Write(line); err != nil {
					return err
				}
				continue
			}
		}
		buf = append(buf, line...)
	}
	return flush()
}

// TryWrite writes what of p the socket accepts now, without waiting for it (a TryWriter): a
// plain TCP socket read through its RawConn only; any other stream, or a write in progress
// elsewhere, takes nothing.
func (s *streamConn) TryWrite(p []byte) (int, error) {
	w, ok := s.waiter.(*socketWaiter)
	if !ok || w == nil || s.kind != KindTCP || len(p) == 0 {
		return 0, nil
	}
	if !s.writeMu.TryLock() {
		return 0, nil
	}
	defer s.writeMu.Unlock()
	n, err := tryWriteSocket(w, p)
	if err != nil {
		return n, fmt.Errorf("transport: write %s to %s: %w", s.kind, s.conn.RemoteAddr(), err)
	}
	return n, nil
}

func (s *streamConn) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.conn.Close() })
	return s.closeErr
}

func (s *streamConn) RemoteAddr() net.Addr { return s.conn.RemoteAddr() }

func (s *streamConn) Kind() string { return s.kind }
