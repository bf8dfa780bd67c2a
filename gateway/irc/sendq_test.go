package irc

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"
)

// recordConn is a transport.Conn that keeps a copy of every line written, in order, and can hold
// writes back until released.
type recordConn struct {
	mu     sync.Mutex
	lines  []string
	writes int
	sizes  []int // lines per write
	closed bool
	gate   chan struct{} // when set, each write waits for a value
}

func (c *recordConn) ReadLine() ([]byte, error) { return nil, net.ErrClosed }
func (c *recordConn) WriteLines(lines [][]byte) error {
	if c.gate != nil {
		<-c.gate
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	c.sizes = append(c.sizes, len(lines))
	for _, l := range lines {
		c.lines = append(c.lines, string(l))
	}
	return nil
}
func (c *recordConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return nil
}
func (c *recordConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
func (c *recordConn) Kind() string         { return "tcp" }

func (c *recordConn) snapshot() ([]string, int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines...), c.writes, c.closed
}

// TestSendQueueKeepsOrderAcrossReusedBatches writes lines while earlier batches are being written
// (so queued lines share writes and the line slices are reused) and checks that every line
// arrives once, in order, and that closeAfterFlush writes the rest before closing.
func TestSendQueueKeepsOrderAcrossReusedBatches(t *testing.T) {
	for _, tc := range []struct {
		name  string
		gated bool
		lines int
	}{{"free", false, 500}, {"held back", true, 500}} {
		t.Run(tc.name, func(t *testing.T) {
			conn := &recordConn{}
			if tc.gated {
				conn.gate = make(chan struct{})
			}
			q := newSendQueue(conn, 1<<20, nil)
			var want []string
			releaseDone := make(chan struct{})
			if tc.gated {
				go func() { // let writes through one at a time while lines keep coming
					defer close(releaseDone)
					for {
						select {
						case conn.gate <- struct{}{}:
						case <-q.whenClosed():
							return
						}
					}
				}()
			} else {
				close(releaseDone)
			}
			for i := range tc.lines {
				line := fmt.Sprintf("line %d\r\n", i)
				want = append(want, line)
				if !q.enqueue([]byte(line)) {
					t.Fatalf("enqueue %d refused", i)
				}
			}
			q.closeAfterFlush([]byte("last\r\n"))
			want = append(want, "last\r\n")
			select {
			case <-q.whenClosed():
			case <-time.After(30 * time.Second):
				t.Fatal("the queue never closed")
			}
			<-releaseDone
			got, writes, closed := conn.snapshot()
			if !closed {
				t.Error("connection not closed after the flush")
			}
			if len(got) != len(want) {
				t.Fatalf("%d lines written, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("line %d = %q, want %q", i, got[i], want[i])
				}
			}
			if q.enqueue([]byte("after\r\n")) {
				t.Error("enqueue accepted after close")
			}
			t.Logf("%d lines in %d writes", len(got), writes)
		})
	}
}

// TestSendQueueOverflowCloses: a queue over its byte budget closes and reports it.
func TestSendQueueOverflowCloses(t *testing.T) {
	conn := &recordConn{gate: make(chan struct{})}
	overflowed := make(chan struct{})
	q := newSendQueue(conn, 64, func() { close(overflowed) })
	q.enqueue([]byte("0123456789012345678901234567890123456789\r\n")) // taken by the writer, held at the gate
	for i := 0; q.enqueue([]byte("0123456789012345678901234567890123456789\r\n")); i++ {
		if i > 10 {
			t.Fatal("the budget never ran out")
		}
	}
	<-overflowed
	if !q.overflowed() {
		t.Error("overflowed() = false")
	}
	close(conn.gate)
	<-q.whenClosed()
}
