package transport

import (
	"errors"
	"net"
	"sync"
	"syscall"
)

// LimitListener caps the concurrent connections each client (see clientaddr.Key)
// holds on ln: a connection over the cap is closed as soon as it is
// accepted, before anything is read from it, and onRefuse (when set) is
// told its remote address. An accepted connection gives its slot back when
// it is closed, also after a hijack (a WebSocket keeps its slot for its
// life). A nil or disabled limiter returns ln unchanged.
func LimitListener(ln net.Listener, limiter *IPLimiter, onRefuse func(net.Addr)) net.Listener {
	if limiter == nil || limiter.max <= 0 {
		return ln
	}
	return &limitListener{Listener: ln, limiter: limiter, onRefuse: onRefuse}
}

type limitListener struct {
	net.Listener
	limiter  *IPLimiter
	onRefuse func(net.Addr)
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		release, ok := l.limiter.Acquire(addrIP(conn.RemoteAddr()))
		if ok {
			return &limitedConn{Conn: conn, release: release}, nil
		}
		if l.onRefuse != nil {
			l.onRefuse(conn.RemoteAddr())
		}
		_ = conn.Close()
	}
}

// limitedConn releases its slot once, at the first Close.
type limitedConn struct {
	net.Conn
	release func()
	once    sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// SyscallConn gives the socket beneath (a limitedConn keeps no input of its own), so that an idle
// WebSocket can wait for input on it (AcceptWebSocket).
func (c *limitedConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

// CloseWrite half-closes the connection when the underlying one can, as
// net/http does before closing a connection it refused a request on.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}
