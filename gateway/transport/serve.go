package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

const (
	// handshakeTimeout bounds the TLS handshake of an accepted connection.
	handshakeTimeout = 10 * time.Second
	// rejectWriteTimeout bounds the farewell written to a refused connection.
	rejectWriteTimeout = 5 * time.Second
	// maxAcceptBackoff caps the pause after a failed Accept (e.g. EMFILE).
	maxAcceptBackoff = time.Second
)

// rejectLine is sent to a connection refused by the per-IP limit.
var rejectLine = []byte("ERROR :Too many connections from your IP address\r\n")

// Serve accepts connections from ln until ctx is done or ln is closed, and
// runs handle for each in its own goroutine. kind is "tcp" or "tls"; for a
// TLS listener (tls.NewListener) the handshake is completed, within ten
// seconds, before handle is called.
//
// A connection over the limiter's per-IP cap is sent an IRC ERROR line and
// closed. The Conn is closed when handle returns. Cancelling ctx closes the
// listener and every connection Serve accepted.
//
// Serve returns once the listener has stopped and every handle it started
// has returned: nil when ctx ended or ln was closed, otherwise the error of
// an Accept that failed permanently. Temporary Accept failures (such as
// running out of file descriptors) are retried with a growing pause.
func Serve(ctx context.Context, ln net.Listener, kind string, limiter *IPLimiter, handle func(Conn)) error {
	acc := &accepted{open: map[*streamConn]struct{}{}}
	stopClosing := context.AfterFunc(ctx, func() {
		_ = ln.Close()
		acc.closeAll()
	})
	defer stopClosing()
	defer acc.handlers.Wait()

	backoff := time.Duration(0)
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			if !isTemporary(err) {
				return fmt.Errorf("transport: accept on %s: %w", ln.Addr(), err)
			}
			backoff = nextBackoff(backoff)
			if !sleepCtx(ctx, backoff) {
				return nil
			}
			continue
		}
		backoff = 0
		acc.handlers.Add(1)
		go serveConn(ctx, c, kind, limiter, handle, acc)
	}
}

// accepted is what Serve keeps of the connections it accepted: their goroutines, and the open
// ones, which it closes when its context ends. (One set rather than a context.AfterFunc per
// connection, which would cost every idle connection about 200 bytes.)
type accepted struct {
	handlers sync.WaitGroup
	mu       sync.Mutex
	open     map[*streamConn]struct{}
	closing  bool
}

// add records an open connection; false once Serve is closing them all.
func (a *accepted) add(c *streamConn) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closing {
		return false
	}
	a.open[c] = struct{}{}
	return true
}

func (a *accepted) remove(c *streamConn) {
	a.mu.Lock()
	delete(a.open, c)
	a.mu.Unlock()
}

// closeAll closes every open connection, and any added later.
func (a *accepted) closeAll() {
	a.mu.Lock()
	a.closing = true
	open := make([]*streamConn, 0, len(a.open))
	for c := range a.open {
		open = append(open, c)
	}
	a.mu.Unlock()
	for _, c := range open {
		_ = c.Close()
	}
}

// serveConn is an accepted connection's goroutine. handle usually reads on it for the life of the
// connection, parked in a read most of that time, so this frame stays small (the setup is in
// openConn): with a shallow enough call chain while parked, the goroutine keeps the runtime's
// smallest stack (2 KiB) instead of 4 KiB per idle connection.
func serveConn(ctx context.Context, c net.Conn, kind string, limiter *IPLimiter, handle func(Conn), acc *accepted) {
	// The setup runs on a short-lived goroutine: its allocations (which can start a GC, deep in
	// the runtime) and a TLS handshake would otherwise grow this goroutine's stack for good.
	var (
		conn    *streamConn
		release func()
	)
	opened := make(chan struct{})
	go func() {
		conn, release = openConn(ctx, c, kind, limiter)
		close(opened)
	}()
	<-opened
	if conn != nil {
		if acc.add(conn) {
			handle(conn)
			acc.remove(conn)
		}
		_ = conn.Close()
		release()
	}
	acc.handlers.Done()
}

// openConn applies the per-IP limit and the TLS handshake, and returns the connection with the
// function that releases its place in the limiter; a nil connection when it was refused (and
// closed).
func openConn(ctx context.Context, c net.Conn, kind string, limiter *IPLimiter) (*streamConn, func()) {
	release, ok := limiter.Acquire(addrIP(c.RemoteAddr()))
	if !ok {
		reject(c)
		return nil, nil
	}
	if tc, isTLS := c.(*tls.Conn); isTLS {
		if err := handshake(ctx, tc); err != nil {
			_ = c.Close()
			release()
			return nil, nil
		}
	}
	return newStreamConn(c, kind), release
}

func handshake(ctx context.Context, tc *tls.Conn) error {
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		return fmt.Errorf("transport: tls handshake with %s: %w", tc.RemoteAddr(), err)
	}
	return nil
}

// reject tells a refused client why, without waiting on it for long.
func reject(c net.Conn) {
	_ = c.SetWriteDeadline(time.Now().Add(rejectWriteTimeout))
	_, _ = c.Write(rejectLine)
	_ = c.Close()
}

// isTemporary reports whether an Accept error is worth retrying, as
// net/http decides it.
func isTemporary(err error) bool {
	var temp interface{ Temporary() bool }
	return errors.As(err, &temp) && temp.Temporary()
}

func nextBackoff(d time.Duration) time.Duration {
	if d == 0 {
		return 5 * time.Millisecond
	}
	return min(2*d, maxAcceptBackoff)
}

// sleepCtx waits for d and reports false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
