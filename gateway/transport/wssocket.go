package transport

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// wsLibraryBufferSize is the size of the bufio reader and writer the WebSocket library is given
// (bufio's smallest). They hold no more than a few header bytes: wsSocket buffers beneath them, and
// only while a connection has input or output in flight.
const wsLibraryBufferSize = 16

// wsSocket is an accepted WebSocket's connection as github.com/coder/websocket sees it. The library
// keeps the bufio reader and writer it is given for the connection's life; wsSocket lets those be
// tiny and holds a buffer only while there is something in it:
//
//   - Reads take a pooled buffer when the socket has input and give it back once it is consumed.
//     No read goes past the end of the frame being read (frames are followed by their headers), so
//     once a message has been read the library's reader holds nothing, and the connection's
//     reader can wait for the socket's next input holding no buffer (wsConn.ReadLine).
//   - Writes are gathered, in a pooled buffer, into whole frames, each written with one write as
//     the library's own buffer would: the library writes a frame's bytes in pieces through its
//     tiny writer.
type wsSocket struct {
	net.Conn               // the hijacked connection: reads and writes go through it
	waiter   *socketWaiter // waits for input on the raw socket; nil when there is none

	in      frameScanner
	pending []byte  // unread input, in lent
	lent    *[]byte // the pooled buffer holding pending
	// idle is set while no input is held here and the last frame has been read to its end: the
	// library then holds no unread input either. The library reads under its own lock, but a close
	// handshake reads on the goroutine that closes, hence an atomic.
	idle atomic.Bool

	// out and wbuf are used only under the library's frame-write lock.
	out  frameScanner
	wbuf *[]byte // a frame being gathered (a pooled write buffer)
}

// newWSSocket wraps a hijacked connection; early holds bytes the client sent after its upgrade
// request that the HTTP server has already read.
func newWSSocket(c net.Conn, early []byte) *wsSocket {
	s := &wsSocket{Conn: c, waiter: newSocketWaiter(c)}
	if len(early) > 0 {
		buf := make([]byte, len(early))
		if len(early) <= initialLineBuffer {
			s.lent = readBufs.Get().(*[]byte)
			buf = *s.lent
		}
		s.pending = buf[:copy(buf, early)]
	}
	s.idle.Store(len(s.pending) == 0)
	return s
}

// inputIdle reports whether neither wsSocket nor the library's reader holds unread input.
func (s *wsSocket) inputIdle() bool { return s.idle.Load() }

func (s *wsSocket) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if n := s.in.allowance(); len(p) > n {
		p = p[:n]
	}
	var n int
	var err error
	switch {
	case len(s.pending) > 0:
		n = copy(p, s.pending)
		s.pending = s.pending[n:]
	case len(p) >= initialLineBuffer:
		n, err = s.Conn.Read(p)
	default:
		s.lent = readBufs.Get().(*[]byte)
		var m int
		m, err = s.Conn.Read(*s.lent)
		n = copy(p, (*s.lent)[:m])
		s.pending = (*s.lent)[n:m]
	}
	if len(s.pending) == 0 {
		if s.lent != nil {
			readBufs.Put(s.lent)
		}
		s.pending, s.lent = nil, nil
	}
	s.in.advance(p[:n])
	s.idle.Store(len(s.pending) == 0 && s.in.atBoundary())
	return n, err
}

func (s *wsSocket) Write(p []byte) (int, error) {
	s.out.advance(p)
	if s.wbuf == nil && s.out.atBoundary() {
		// Whole frames, nothing gathered before them: written as they are.
		return s.Conn.Write(p)
	}
	if s.wbuf == nil {
		s.wbuf = getWriteBuf(len(p) + s.out.allowance())
	}
	buf := *s.wbuf
	if len(buf)+len(p) > cap(buf) {
		// Longer than the buffer: what was gathered goes out first, as a piece of the frame.
		if _, err := s.Conn.Write(buf); err != nil {
			s.dropWrite()
			return 0, err
		}
		buf = buf[:0]
		if len(p) > cap(buf) {
			*s.wbuf = buf
			n, err := s.Conn.Write(p)
			if err != nil || s.out.atBoundary() {
				s.dropWrite()
			}
			return n, err
		}
	}
	buf = append(buf, p...)
	*s.wbuf = buf
	if !s.out.atBoundary() {
		return len(p), nil
	}
	_, err := s.Conn.Write(buf)
	s.dropWrite()
	if err != nil {
		// The bytes of p that were written are not known; none of them is reported.
		return 0, err
	}
	return len(p), nil
}

// dropWrite gives the gathering buffer back.
func (s *wsSocket) dropWrite() {
	if s.wbuf != nil {
		putWriteBuf(s.wbuf)
		s.wbuf = nil
	}
}

// frameScanner follows the frame boundaries of a WebSocket byte stream (RFC 6455 §5.2): it reads
// the headers' lengths and interprets nothing else (the library checks the frames).
type frameScanner struct {
	hdr  [14]byte // the header being read
	hn   uint8    // header bytes seen
	need uint8    // the header's length once its second byte is seen, 0 before
	left int64    // payload bytes of the current frame still to come
}

// atBoundary reports whether the bytes seen end with a whole frame.
func (f *frameScanner) atBoundary() bool { return f.hn == 0 && f.left == 0 }

// allowance is the number of bytes that can come before the scanner must see the next part of a
// header: the rest of the current payload, or of the header being read.
func (f *frameScanner) allowance() int {
	switch {
	case f.left > 0:
		return int(min(f.left, math.MaxInt32))
	case f.need == 0:
		return 2 - int(f.hn)
	default:
		return int(f.need - f.hn)
	}
}

// advance takes the next bytes of the stream.
func (f *frameScanner) advance(b []byte) {
	for len(b) > 0 {
		if f.left > 0 {
			k := min(int64(len(b)), f.left)
			f.left -= k
			b = b[k:]
			continue
		}
		f.hdr[f.hn] = b[0]
		f.hn++
		b = b[1:]
		if f.hn == 2 {
			f.need = frameHeaderLen(f.hdr[1])
		}
		if f.hn == f.need {
			f.left = framePayloadLen(f.hdr[:f.hn])
			f.hn, f.need = 0, 0
		}
	}
}

// frameHeaderLen is the length of a frame header whose second byte is b1.
func frameHeaderLen(b1 byte) uint8 {
	n := uint8(2)
	switch b1 & 0x7f {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if b1&0x80 != 0 {
		n += 4 // masking key
	}
	return n
}

// framePayloadLen reads the payload length of a whole frame header. A length over 2⁶³−1, which
// RFC 6455 forbids and the library refuses, is taken as 2⁶³−1.
func framePayloadLen(hdr []byte) int64 {
	switch n := hdr[1] & 0x7f; n {
	case 126:
		return int64(binary.BigEndian.Uint16(hdr[2:4]))
	case 127:
		return int64(min(binary.BigEndian.Uint64(hdr[2:10]), math.MaxInt64))
	default:
		return int64(n)
	}
}

// wsHijacker is the http.ResponseWriter handed to websocket.Accept: its Hijack returns the
// connection wrapped in a wsSocket with the library's tiny bufio reader and writer.
type wsHijacker struct {
	http.ResponseWriter
	sock *wsSocket // set by Hijack
}

// WriteHeaderNow writes gin's delayed header, which the library asks for before it hijacks.
func (h *wsHijacker) WriteHeaderNow() {
	if w, ok := h.ResponseWriter.(interface{ WriteHeaderNow() }); ok {
		w.WriteHeaderNow()
	}
}

func (h *wsHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, fmt.Errorf("transport: hijack websocket connection: %w", err)
	}
	// The HTTP server set a read deadline for the upgrade request and keeps it on the hijacked
	// connection: a WebSocket lives as long as its session, which the IRC server's pings bound.
	if err := conn.SetDeadline(time.Time{}); err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("transport: websocket connection deadline: %w", err)
	}
	if err := brw.Writer.Flush(); err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("transport: websocket upgrade response: %w", err)
	}
	early, _ := brw.Reader.Peek(brw.Reader.Buffered())
	h.sock = newWSSocket(conn, early)
	return h.sock, bufio.NewReadWriter(
		bufio.NewReaderSize(h.sock, wsLibraryBufferSize),
		bufio.NewWriterSize(h.sock, wsLibraryBufferSize),
	), nil
}
