package transport

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// initialLineBuffer is the read buffer an idle connection holds. IRC lines are short, so a buffer
// sized for the longest line (8 KiB) would mostly sit empty on every connection: it grows, doubling
// up to the line limit, only while a long line is being read, and shrinks back once it is consumed.
const initialLineBuffer = 512

// readBufs holds the read buffers (initialLineBuffer bytes each) of connections that have no
// unread input. It is package-level because it is a cache with no observable state.
var readBufs = sync.Pool{New: func() any {
	b := make([]byte, initialLineBuffer)
	return &b
}}

// lineReader splits a byte stream into lines ending in LF (an optional CR
// before it is removed too), enforcing a maximum line length that includes
// the terminator.
type lineReader struct {
	r io.Reader
	// fresh, when set, reads without a buffer being held while it waits: the buffer is given
	// back whenever no unread bytes are left, and fresh returns a new one holding the next input.
	fresh      freshReader
	buf        []byte
	start, end int // unread bytes are buf[start:end]
	maxLine    int
	maxDrain   int
	err        error // sticky read error, returned once the buffered lines are used up
}

// newLineReader returns a reader for lines of at most maxLine bytes
// including the terminator.
func newLineReader(r io.Reader, maxLine, maxDrain int) *lineReader {
	lr := &lineReader{r: r, maxLine: maxLine, maxDrain: maxDrain}
	if f, ok := r.(freshReader); ok && maxLine >= initialLineBuffer {
		lr.fresh = f
	} else {
		lr.buf = make([]byte, min(initialLineBuffer, maxLine))
	}
	return lr
}

// releaseIdle gives the buffer back while no unread bytes are left (with a fresh source only),
// before the caller waits for input.
func (lr *lineReader) releaseIdle() {
	if lr.fresh != nil && lr.start == lr.end && lr.buf != nil {
		lr.fresh.release(lr.buf)
		lr.buf, lr.start, lr.end = nil, 0, 0
	}
}

// freshReader is a source that can wait for input before it takes a buffer (rawReader).
type freshReader interface {
	// readFresh waits for input and returns a buffer of initialLineBuffer bytes holding the n
	// bytes read; the buffer is nil when nothing was read.
	readFresh() (buf []byte, n int, err error)
	// release takes back a buffer that holds no unread bytes.
	release(buf []byte)
}

// readLine returns the next complete line without CR/LF. A partial line
// left when the stream ends is dropped and io.EOF returned, as IRC servers
// do: a line counts only once its LF arrives. The returned slice is valid
// until the next call.
func (lr *lineReader) readLine() ([]byte, error) {
	for {
		if i := bytes.IndexByte(lr.buf[lr.start:lr.end], '\n'); i >= 0 {
			line := lr.buf[lr.start : lr.start+i+1]
			lr.start += i + 1
			return trimLineEnd(line), nil
		}
		if lr.end-lr.start >= lr.maxLine {
			discarded := lr.end - lr.start
			lr.start, lr.end = 0, 0
			return nil, lr.drain(discarded)
		}
		if err := lr.fill(); err != nil {
			return nil, err
		}
	}
}

// fill makes room (compacting, shrinking an idle large buffer, or growing up to maxLine) and reads
// once more from the stream.
func (lr *lineReader) fill() error {
	if lr.err != nil {
		return lr.err
	}
	pending := lr.end - lr.start
	var n int
	var err error
	switch {
	case pending == 0 && lr.fresh != nil:
		lr.fresh.release(lr.buf)
		lr.buf, lr.start, lr.end = nil, 0, 0
		lr.buf, n, err = lr.fresh.readFresh()
		return lr.filled(n, err)
	case pending == 0 && len(lr.buf) > initialLineBuffer:
		lr.buf = make([]byte, initialLineBuffer)
		lr.start, lr.end = 0, 0
	case lr.start > 0:
		copy(lr.buf, lr.buf[lr.start:lr.end])
		lr.start, lr.end = 0, pending
	}
	if lr.end == len(lr.buf) {
		grown := make([]byte, min(2*len(lr.buf), lr.maxLine))
		copy(grown, lr.buf[:lr.end])
		lr.buf = grown
	}
	n, err = lr.r.Read(lr.buf[lr.end:])
	return lr.filled(n, err)
}

// filled records the outcome of a read of n bytes into buf[end:].
func (lr *lineReader) filled(n int, err error) error {
	lr.end += n
	if err != nil {
		lr.err = err
		if n == 0 {
			return err
		}
	}
	return nil
}

// drain discards the rest of an over-long line, of which discarded bytes have already been
// consumed, up to and including its LF. A line whose LF lies further than the drain cap (counted
// in whole line-sized blocks, so the outcome does not depend on how the stream was chunked) is an
// input flood, which ends the connection.
func (lr *lineReader) drain(discarded int) error {
	flood := func(n int) bool { return (n/lr.maxLine)*lr.maxLine > lr.maxDrain }
	for {
		if i := bytes.IndexByte(lr.buf[lr.start:lr.end], '\n'); i >= 0 {
			lr.start += i + 1
			if p := discarded + i; flood(p) {
				return fmt.Errorf("transport: %d bytes without a line end: %w", p, ErrInputFlood)
			}
			return ErrLineTooLong
		}
		discarded += lr.end - lr.start
		lr.start, lr.end = 0, 0
		if flood(discarded) {
			return fmt.Errorf("transport: %d bytes without a line end: %w", discarded, ErrInputFlood)
		}
		if err := lr.fill(); err != nil {
			return err
		}
	}
}

// trimLineEnd removes a trailing LF and then a trailing CR.
func trimLineEnd(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line
}
