package transport

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

func TestLimitListenerClosesConnectionsOverTheCap(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var refused atomic.Int32
	ln := LimitListener(inner, NewIPLimiter(2), func(net.Addr) { refused.Add(1) })
	defer ln.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- conn
		}
	}()
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	next := func() net.Conn {
		t.Helper()
		select {
		case c := <-accepted:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("connection not accepted")
			return nil
		}
	}
	dial()
	first := next()
	dial()
	next()

	// The third from the same address is closed at accept: the client reads EOF at once.
	expectClosed(t, dial())
	if refused.Load() != 1 {
		t.Fatalf("onRefuse called %d times, want 1", refused.Load())
	}
	select {
	case c := <-accepted:
		t.Fatalf("connection over the cap handed to the server: %v", c.RemoteAddr())
	default:
	}

	// Closing one gives its slot back, once however often it is closed.
	first.Close()
	first.Close()
	dial()
	next()
	expectClosed(t, dial())
}

// expectClosed checks that the server closed conn without sending anything.
func expectClosed(t *testing.T, conn net.Conn) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("connection over the cap: read %v, want EOF", err)
	}
}

func TestLimitListenerDisabled(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	for _, l := range []*IPLimiter{nil, NewIPLimiter(0), NewIPLimiter(-1)} {
		if got := LimitListener(inner, l, nil); got != inner {
			t.Errorf("LimitListener with %+v wrapped the listener", l)
		}
	}
}
