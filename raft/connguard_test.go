package raft

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"
)

func TestLimitsFor(t *testing.T) {
	for _, c := range []struct {
		nofile uint64
		open   int
	}{{20000, 5000}, {1024, 256}, {100, 64}, {1 << 40, 1 << 20}} {
		l := limitsFor(c.nofile)
		if l.maxOpen != c.open || l.maxPendingPerPort > l.maxOpen || l.maxPendingPerAddr > l.maxPendingPerPort {
			t.Errorf("nofile %d: %+v", c.nofile, l)
		}
	}
}

// TestConnGuard: beyond the per-address and open bounds a cluster port closes what it accepts;
// a connection through its handshake frees its pending slot, a closed one its open slot.
func TestConnGuard(t *testing.T) {
	g := newConnGuard(connLimits{maxOpen: 4, maxPendingPerPort: 3, maxPendingPerAddr: 2}, slog.New(slog.DiscardHandler))
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := g.listener("raft", raw)
	defer ln.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	closedByServer := func(c net.Conn) bool {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := c.Read(make([]byte, 1))
		return err == io.EOF
	}
	dial()
	dial()
	s1, s2 := <-accepted, <-accepted
	if third := dial(); !closedByServer(third) {
		t.Fatal("a third pending connection from one address was kept")
	}
	if open, pending := g.counts("raft"); open != 2 || pending != 2 {
		t.Fatalf("open %d, pending %d", open, pending)
	}
	handshakeDone(s1) // through its handshake: no longer pending
	dial()
	s3 := <-accepted
	handshakeDone(s2)
	handshakeDone(s3)
	dial()
	handshakeDone(<-accepted)
	if open, _ := g.counts("raft"); open != 4 {
		t.Fatalf("open %d", open)
	}
	if e := dial(); !closedByServer(e) {
		t.Fatal("a connection past the open bound was kept")
	}
	s1.Close()
	if open, _ := g.counts("raft"); open != 3 {
		t.Fatalf("after a close: open %d", open)
	}
}

func TestSameHost(t *testing.T) {
	remote := &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 4000}
	for _, c := range []struct {
		addr string
		ok   bool
	}{{"127.0.0.1:7000", true}, {"127.0.0.2:7000", false}, {"[::ffff:127.0.0.1]:7000", true}, {"node-b.example:7000", true}, {"bad", false}} {
		if err := sameHost(c.addr, remote, "n"); (err == nil) != c.ok {
			t.Errorf("%s: %v", c.addr, err)
		}
	}
}
