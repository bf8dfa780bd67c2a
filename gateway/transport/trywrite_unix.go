//go:build unix

package transport

import (
	"errors"
	"sync"
	"syscall"
)

// tryWrite is one non-blocking write attempt through a socket's RawConn. Its callback is bound
// once and the value is pooled, so an attempt allocates nothing and an idle connection keeps
// nothing for it.
type tryWrite struct {
	fn  func(fd uintptr) bool // t.once, bound once
	p   []byte
	n   int
	err error
}

var tryWrites = sync.Pool{New: func() any {
	t := &tryWrite{}
	t.fn = t.once
	return t
}}

// once writes p with one write(2); it reports true whatever happened, so that RawConn.Write never
// waits for the socket to become writable.
func (t *tryWrite) once(fd uintptr) bool {
	for {
		n, err := syscall.Write(int(fd), t.p)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			return true
		case err != nil:
			t.err = err
			return true
		}
		t.n = n
		return true
	}
}

// tryWriteSocket writes what of p w's socket accepts now, without waiting.
func tryWriteSocket(w *socketWaiter, p []byte) (int, error) {
	t := tryWrites.Get().(*tryWrite)
	t.p = p
	err := w.rc.Write(t.fn)
	n, werr := t.n, t.err
	t.p, t.n, t.err = nil, 0, nil
	tryWrites.Put(t)
	if err == nil {
		err = werr
	}
	return n, err
}
