package load

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// quitConn is a lineConn whose server side closes after QUIT once release
// is closed (or never, when hang is set).
type quitConn struct {
	release  <-chan struct{}
	hang     bool
	quitSent atomic.Bool
	closed   atomic.Bool
	active   *atomic.Int32 // connections handed to the backlog and not yet closed
	peak     *atomic.Int32
}

func (c *quitConn) readLine(ctx context.Context) (string, error) {
	if !c.quitSent.Load() {
		return "", errors.New("read before QUIT")
	}
	if c.hang {
		<-ctx.Done()
		return "", ctx.Err()
	}
	select {
	case <-c.release:
		return "", io.EOF
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (c *quitConn) writeLines(_ context.Context, lines ...string) error {
	if len(lines) == 1 && lines[0] == "QUIT" {
		c.quitSent.Store(true)
	}
	return nil
}

func (c *quitConn) close() error {
	if !c.closed.Swap(true) {
		c.active.Add(-1)
	}
	return nil
}

func TestQuitBacklog(t *testing.T) {
	tests := []struct {
		name         string
		backlog      int
		conns        int
		hang         int // how many of the connections the server never closes
		wantTimeouts int
	}{
		{"all closed by the server", 3, 10, 0, 0},
		{"backlog of one", 1, 4, 0, 0},
		{"some never closed", 2, 5, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			release := make(chan struct{})
			var active, peak atomic.Int32
			q := newQuitBacklog(tt.backlog)
			conns := make([]*quitConn, tt.conns)
			var handed sync.WaitGroup
			handed.Go(func() {
				for i := range conns {
					c := &quitConn{release: release, hang: i < tt.hang, active: &active, peak: &peak}
					conns[i] = c
					n := active.Add(1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					// A hanging connection holds its slot until its own timeout.
					timeout := 30 * time.Second
					if c.hang {
						timeout = 50 * time.Millisecond
					}
					q.quit(ctx, c, timeout)
				}
			})
			// The backlog fills up and the handing-over goroutine waits for room
			// (only the hanging ones time out on their own) until release.
			deadline := time.Now().Add(10 * time.Second)
			for active.Load() < int32(tt.backlog) && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond) // polling a condition, not synchronizing on time
			}
			close(release)
			handed.Wait()
			q.wait()
			if got := q.timeouts(); got != tt.wantTimeouts {
				t.Errorf("timeouts = %d, want %d", got, tt.wantTimeouts)
			}
			if p := peak.Load(); p > int32(tt.backlog)+1 {
				t.Errorf("peak outstanding = %d, backlog %d (plus the one being handed over)", p, tt.backlog)
			}
			for i, c := range conns {
				if !c.quitSent.Load() || !c.closed.Load() {
					t.Errorf("connection %d: QUIT sent %t, closed %t", i, c.quitSent.Load(), c.closed.Load())
				}
			}
		})
	}
}

func TestQuitBacklogClosesWithoutQuitWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	defer close(release)
	var active, peak atomic.Int32
	q := newQuitBacklog(1)
	first := &quitConn{release: release, active: &active, peak: &peak}
	second := &quitConn{release: release, active: &active, peak: &peak}
	active.Add(2)
	q.quit(ctx, first, 30*time.Second) // takes the only slot and waits for the server
	cancel()
	q.quit(ctx, second, 30*time.Second) // no room and ctx done: closed at once
	if !second.closed.Load() || second.quitSent.Load() {
		t.Errorf("second connection: closed %t, QUIT sent %t; want closed without QUIT", second.closed.Load(), second.quitSent.Load())
	}
	q.wait()
	if !first.closed.Load() {
		t.Error("first connection not closed after its context ended")
	}
}
