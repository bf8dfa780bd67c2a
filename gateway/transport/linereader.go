package transport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// lineReader splits a byte stream into lines ending in LF (an optional CR
// before it is removed too), enforcing a maximum line length that includes
// the terminator.
type lineReader struct {
	buf      *bufio.Reader
	maxDrain int
}

// newLineReader returns a reader for lines of at most maxLine bytes
// including the terminator; maxLine must be at least 16 (bufio's minimum).
func newLineReader(r io.Reader, maxLine, maxDrain int) *lineReader {
	return &lineReader{buf: bufio.NewReaderSize(r, maxLine), maxDrain: maxDrain}
}

// readLine returns the next complete line without CR/LF. A partial line
// left when the stream ends is dropped and io.EOF returned, as IRC servers
// do: a line counts only once its LF arrives.
func (lr *lineReader) readLine() ([]byte, error) {
	line, err := lr.buf.ReadSlice('\n')
	switch {
	case err == nil:
		return trimLineEnd(line), nil
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, lr.drain(len(line))
	default:
		return nil, err
	}
}

// drain discards the rest of an over-long line, of which discarded bytes
// have already been consumed, up to and including its LF.
func (lr *lineReader) drain(discarded int) error {
	for {
		chunk, err := lr.buf.ReadSlice('\n')
		discarded += len(chunk)
		switch {
		case err == nil:
			return ErrLineTooLong
		case !errors.Is(err, bufio.ErrBufferFull):
			return err
		case discarded > lr.maxDrain:
			return fmt.Errorf("transport: %d bytes without a line end: %w", discarded, ErrInputFlood)
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
