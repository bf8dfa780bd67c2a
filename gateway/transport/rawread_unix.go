//go:build unix

package transport

import (
	"errors"
	"io"
	"net"
	"syscall"
)

// rawReader reads a socket through its syscall.RawConn: the read system call runs inside the
// callback and the goroutine waits for readiness in net's poller between attempts.
//
// It exists for the depth of the call chain, not for speed. An idle connection's goroutine is
// parked inside Read for most of its life; through net.Conn.Read that takes three frames of the
// net and internal/poll packages (about 300 bytes), through RawConn.Read two smaller ones. Every
// byte counts there: the runtime's smallest stack (2 KiB) leaves about 1.1 KiB for frames, and a
// connection that needs more keeps a 4 KiB stack while it idles.
//
// It also lets an idle connection hold no read buffer: awaitInput waits for input holding none,
// and readFresh then takes one from a shared pool (see lineReader.fresh).
type rawReader struct {
	socketWaiter
	read  func(fd uintptr) bool // r.readOnce, bound once
	p     []byte
	fresh bool    // p is a pooled buffer that readFresh hands out
	lent  *[]byte // the pooled buffer handed out by readFresh, until it is released
	n     int
	err   error
}

// socketWaiter waits for a socket's input without reading it (an inputWaiter).
type socketWaiter struct {
	rc   syscall.RawConn
	peek func(fd uintptr) bool // w.peekOnce, bound once
	one  [1]byte               // peekOnce's buffer
}

// rawConnOf returns the RawConn of c's socket, or nil when c has none. A wrapper of a connection
// offers it by forwarding SyscallConn, which it may do only if it keeps no input of its own
// (a *tls.Conn, which does, has no SyscallConn).
func rawConnOf(c net.Conn) syscall.RawConn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// newRawReader returns a reader over c's RawConn (a *rawReader), or nil when c has none.
func newRawReader(c net.Conn) io.Reader {
	rc := rawConnOf(c)
	if rc == nil {
		return nil
	}
	r := &rawReader{socketWaiter: socketWaiter{rc: rc}}
	r.read = r.readOnce
	r.peek = r.peekOnce
	return r
}

// waiterOf returns the waiter of a reader from newRawReader: the socketWaiter itself, not the
// reader through its promoted method, which would add a wrapper's frame to the stack of a parked
// connection.
func waiterOf(r io.Reader) inputWaiter {
	return &r.(*rawReader).socketWaiter
}

// newSocketWaiter returns a waiter on c's socket, or nil when c has none (see rawConnOf).
func newSocketWaiter(c net.Conn) *socketWaiter {
	rc := rawConnOf(c)
	if rc == nil {
		return nil
	}
	w := &socketWaiter{rc: rc}
	w.peek = w.peekOnce
	return w
}

// awaitInput waits until the socket has input (or has ended), holding no buffer and with as few
// frames on the stack as possible: an idle connection's reader is parked here.
func (w *socketWaiter) awaitInput() error {
	return w.rc.Read(w.peek)
}

// peekOnce reports whether the socket has input, or an end or error for the next read to find.
func (w *socketWaiter) peekOnce(fd uintptr) bool {
	for {
		err := peekByte(fd, &w.one)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		return !errors.Is(err, syscall.EAGAIN)
	}
}

func (r *rawReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.p = p
	return r.wait()
}

func (r *rawReader) readFresh() ([]byte, int, error) {
	// The buffer is taken here, not in the read callback, to keep a pool allocation (which can go
	// deep into the runtime) off the deeper stack; a caller that waited with awaitInput takes it
	// only once input is there.
	r.lent = readBufs.Get().(*[]byte)
	r.p, r.fresh = *r.lent, true
	n, err := r.wait()
	buf := r.p
	r.p, r.fresh = nil, false
	if n == 0 {
		r.release(buf)
		buf = nil
	}
	return buf, n, err
}

func (r *rawReader) release(buf []byte) {
	if r.lent != nil && len(buf) > 0 && &buf[0] == &(*r.lent)[0] {
		readBufs.Put(r.lent)
	}
	// Otherwise the line reader replaced the pooled buffer by a larger one (a long line): the
	// pooled one is left to the garbage collector.
	r.lent = nil
}

// wait reads once the socket is readable.
func (r *rawReader) wait() (int, error) {
	err := r.rc.Read(r.read)
	n, rerr := r.n, r.err
	r.n, r.err = 0, nil
	if !r.fresh {
		r.p = nil
	}
	switch {
	case err != nil:
		return 0, err
	case rerr != nil:
		return 0, rerr
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// readOnce makes one read attempt; it reports false (wait for readiness and call again) when the
// socket has nothing to read yet.
func (r *rawReader) readOnce(fd uintptr) bool {
	for {
		n, err := syscall.Read(int(fd), r.p)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			return false
		case err != nil:
			r.err = err
			return true
		}
		r.n = n
		return true
	}
}
