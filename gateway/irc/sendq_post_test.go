package irc

import (
	"slices"
	"sync"
	"testing"
)

// tryConn is a recordConn that can also write without waiting (transport.TryWriter): TryWrite
// takes at most take bytes of what it is given (all of it when take is negative) and records
// them as one entry of tried.
type tryConn struct {
	recordConn
	tmu    sync.Mutex
	take   int
	tried  []string
	during func() // called inside TryWrite, as a line posted by another goroutine meanwhile
}

func (c *tryConn) TryWrite(p []byte) (int, error) {
	c.tmu.Lock()
	defer c.tmu.Unlock()
	n := len(p)
	if c.take >= 0 && c.take < n {
		n = c.take
	}
	c.tried = append(c.tried, string(p[:n]))
	if f := c.during; f != nil {
		c.during = nil
		f()
	}
	return n, nil
}

func (c *tryConn) triedLines() []string {
	c.tmu.Lock()
	defer c.tmu.Unlock()
	return append([]string(nil), c.tried...)
}

// TestSendQueuePostWritesIdleQueueInline: a line posted inline to an idle queue that would write
// at once is written by the posting goroutine before post returns, and no writer goroutine is
// left running; a line posted without inline, to a queue that coalesces (it wrote less than
// coalesceWindow ago while busy), or to a connection that cannot write without waiting goes to
// the writer goroutine as before.
func TestSendQueuePostWritesIdleQueueInline(t *testing.T) {
	line := "PRIVMSG #c :hi\r\n"
	for _, tc := range []struct {
		name    string
		inline  bool
		noTry   bool // the connection has no TryWrite
		busy    bool // the queue coalesces and wrote just now
		wantTry bool // written by TryWrite in post
	}{
		{name: "idle queue, inline", inline: true, wantTry: true},
		{name: "not inline", inline: false},
		{name: "no TryWrite", inline: true, noTry: true},
		{name: "coalescing queue", inline: true, busy: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			conn := &tryConn{take: -1}
			var q *sendQueue
			if tc.noTry {
				q = newSendQueueClock(&conn.recordConn, 1<<20, nil, clk)
			} else {
				q = newSendQueueClock(conn, 1<<20, nil, clk)
			}
			if tc.busy {
				q.mu.Lock()
				q.busy, q.lastWrite = true, clk.Now()
				q.mu.Unlock()
			}
			if !q.post([]byte(line), tc.inline) {
				t.Fatal("post refused the line")
			}
			if tc.wantTry {
				q.mu.Lock()
				writing := q.writing
				q.mu.Unlock()
				if got := conn.triedLines(); !slices.Equal(got, []string{line}) || writing {
					t.Fatalf("after post: tried %q, writer running %v; want the line written and no writer", got, writing)
				}
			} else {
				awaitWriterExit(t, q)
				if got := conn.triedLines(); len(got) != 0 {
					t.Fatalf("TryWrite was given %q; want nothing", got)
				}
			}
			lines, writes, _ := conn.recordConn.snapshot()
			if tc.wantTry {
				if writes != 0 {
					t.Fatalf("WriteLines ran %d times; want none", writes)
				}
			} else if !slices.Equal(lines, []string{line}) {
				t.Fatalf("written %q, want %q", lines, line)
			}
		})
	}
}

// TestSendQueuePostDoesNotWaitForASlowSocket: when the socket takes only part of a line, post
// returns without waiting; the writer goroutine writes the rest, then the lines posted meanwhile,
// in order, even while its writes are held up.
func TestSendQueuePostDoesNotWaitForASlowSocket(t *testing.T) {
	conn := &tryConn{take: 3}
	conn.gate = make(chan struct{})
	q := newSendQueueClock(conn, 1<<20, nil, newFakeClock())
	first, second, third := "PRIVMSG #c :one\r\n", "PRIVMSG #c :two\r\n", "PRIVMSG #c :three\r\n"
	// The gate holds every WriteLines: were post to wait for the writer, these calls would not
	// return and the test would never get to open the gate.
	for _, l := range []string{first, second, third} {
		if !q.post([]byte(l), true) {
			t.Fatalf("post refused %q", l)
		}
	}
	if got := conn.triedLines(); !slices.Equal(got, []string{first[:3]}) {
		t.Fatalf("TryWrite took %q; want only the first line's first 3 bytes", got)
	}
	go func() {
		for {
			select {
			case conn.gate <- struct{}{}:
			case <-q.whenClosed():
				return
			}
		}
	}()
	q.closeAfterFlush()
	awaitValue(t, 0, "the close", q.whenClosed())
	lines, _, closed := conn.recordConn.snapshot()
	if want := []string{first[3:], second, third}; !slices.Equal(lines, want) || !closed {
		t.Fatalf("written %q (closed %v), want %q then closed", lines, closed, want)
	}
}

// TestSendQueuePostAllocatesNothing: posting a line to an idle connection that takes it at once
// allocates nothing (no writer goroutine is started for it).
func TestSendQueuePostAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	conn := &tryConn{take: -1}
	conn.tried = make([]string, 0, 1000)
	q := newSendQueueClock(conn, 1<<20, nil, systemClock{})
	line := []byte("PRIVMSG #c :hi\r\n")
	allocs := testing.AllocsPerRun(200, func() {
		q.post(line, true)
		conn.tmu.Lock()
		conn.tried = conn.tried[:0]
		conn.tmu.Unlock()
	})
	// tryConn.TryWrite converts the line to a string: one allocation of the test's own.
	if allocs > 1 {
		t.Fatalf("post allocated %.1f times a line; want no more than the test connection's own 1", allocs)
	}
}

// TestSendQueuePostKeepsOrderWithLinesQueuedMeanwhile: a line posted while another goroutine's
// inline write is in progress waits for it, and the part of that write the socket did not take
// goes out before it.
func TestSendQueuePostKeepsOrderWithLinesQueuedMeanwhile(t *testing.T) {
	conn := &tryConn{take: 4}
	q := newSendQueueClock(conn, 1<<20, nil, newFakeClock())
	first, second := "PRIVMSG #c :one\r\n", "PRIVMSG #c :two\r\n"
	conn.during = func() {
		if !q.post([]byte(second), true) {
			t.Error("post refused the second line")
		}
	}
	if !q.post([]byte(first), true) {
		t.Fatal("post refused the first line")
	}
	q.closeAfterFlush()
	awaitValue(t, 0, "the close", q.whenClosed())
	if got := conn.triedLines(); !slices.Equal(got, []string{first[:4]}) {
		t.Fatalf("TryWrite took %q; want only the first line's first 4 bytes", got)
	}
	if lines, _, _ := conn.recordConn.snapshot(); !slices.Equal(lines, []string{first[4:], second}) {
		t.Fatalf("written %q, want the rest of the first line, then the second", lines)
	}
}
