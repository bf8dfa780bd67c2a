package irc

import (
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock the test moves by hand. Sleep reports its duration on slept and returns when
// the test resumes it, with the clock moved forward by that duration plus resumeLag. A jump set
// with lagNext moves the clock right after the next reading: the writer started by the next enqueue
// (which reads the clock when it starts one) then runs that late.
type fakeClock struct {
	mu        sync.Mutex
	now       time.Duration
	jump      time.Duration
	resumeLag time.Duration
	slept     chan time.Duration
	resume    chan struct{}
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Second, slept: make(chan time.Duration, 1), resume: make(chan struct{})}
}

func (c *fakeClock) Now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now
	c.now += c.jump
	c.jump = 0
	return now
}

func (c *fakeClock) Sleep(d time.Duration) {
	c.slept <- d
	<-c.resume
	c.mu.Lock()
	c.now += d + c.resumeLag
	c.mu.Unlock()
}

func (c *fakeClock) set(f func(c *fakeClock)) {
	c.mu.Lock()
	f(c)
	c.mu.Unlock()
}

// batchConn is a transport.Conn that hands every write, as one batch of lines, to the test.
type batchConn struct {
	batches chan []string
	closed  chan struct{}
	once    sync.Once
}

func newBatchConn() *batchConn {
	return &batchConn{batches: make(chan []string, 64), closed: make(chan struct{})}
}

func (c *batchConn) ReadLine() ([]byte, error) { return nil, net.ErrClosed }
func (c *batchConn) WriteLines(lines [][]byte) error {
	batch := make([]string, len(lines))
	for i, l := range lines {
		batch[i] = string(l)
	}
	c.batches <- batch
	return nil
}
func (c *batchConn) Close() error         { c.once.Do(func() { close(c.closed) }); return nil }
func (c *batchConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
func (c *batchConn) Kind() string         { return "tcp" }

// coalesceStep is one action or expectation in a coalescing scenario.
type coalesceStep struct {
	enqueue    []string      // lines queued with one enqueue call
	reply      []string      // lines queued with one reply call
	closeFlush []string      // closeAfterFlush with these lines (a non-nil empty slice: none)
	closeNow   bool          // closeNow
	advance    time.Duration // move the clock
	late       time.Duration // the writer the next enqueue starts runs this late
	resumeLag  time.Duration // the writer wakes this late from its waits (-1: on time)
	idle       bool          // wait until the writer has returned (the next enqueue starts one)
	state      string        // expect the queue "busy" (coalescing) or "calm"
	write      []string      // expect one write of exactly these lines
	sleep      time.Duration // expect the writer to wait this long
	resume     bool          // end the writer's wait (moving the clock by it)
	closed     bool          // expect the connection closed
}

func lines(prefix string, n, size int) []string {
	out := make([]string, n)
	for i := range out {
		body := fmt.Sprintf("%s %d ", prefix, i)
		out[i] = body + strings.Repeat("x", max(0, size-len(body)-2)) + "\r\n"
	}
	return out
}

// TestSendQueueCoalescing drives the queue's writer with a fake clock: a line reaching a quiet
// connection is written at once; a line within coalesceWindow of the previous write waits until
// the window ends and shares one write with everything queued meanwhile; a full buffer, a closing
// queue and a dropped queue do not wait.
func TestSendQueueCoalescing(t *testing.T) {
	big := lines("big", 2*coalesceBytes/512, 512)
	third := coalesceWindow / 3
	a, b, c, d, e, f := "a\r\n", "b\r\n", "c\r\n", "d\r\n", "e\r\n", "f\r\n"
	bye := "ERROR :bye\r\n"
	for _, tc := range []struct {
		name  string
		steps []coalesceStep
	}{
		{"a writer on time writes at once", []coalesceStep{
			{enqueue: []string{a}}, {write: []string{a}}, {idle: true},
			{advance: third},
			{enqueue: []string{b}}, {write: []string{b}}, {idle: true},
			{late: busyLag / 2},
			{enqueue: []string{c, d}}, {write: []string{c, d}},
		}},
		{"a late writer waits for the window and batches", []coalesceStep{
			{late: busyLag}, {enqueue: []string{a}}, {write: []string{a}}, {idle: true},
			{advance: third}, {late: busyLag},
			{enqueue: []string{b}}, {sleep: coalesceWindow - third - busyLag},
			{enqueue: []string{c}}, {enqueue: []string{d, e}},
			{resume: true}, {write: []string{b, c, d, e}}, {idle: true},
			// The next writer runs on time: the queue writes at once again.
			{enqueue: []string{f}}, {write: []string{f}},
		}},
		{"a writer woken late keeps coalescing, one woken on time stops", []coalesceStep{
			{late: busyLag}, {enqueue: []string{a}}, {write: []string{a}}, {idle: true},
			{late: busyLag}, {enqueue: []string{b}}, {sleep: coalesceWindow - busyLag},
			{resumeLag: busyLag}, {resume: true}, {write: []string{b}}, {idle: true},
			{state: "busy"},
			{late: busyLag}, {enqueue: []string{c}}, {sleep: coalesceWindow - busyLag},
			{resumeLag: -1}, {resume: true}, {write: []string{c}}, {idle: true},
			{state: "calm"},
		}},
		{"a reply is written without waiting", []coalesceStep{
			{late: busyLag}, {enqueue: []string{a}}, {write: []string{a}}, {idle: true},
			{advance: third}, {late: busyLag},
			{reply: []string{b, c}}, {write: []string{b, c}}, {idle: true},
			{state: "busy"},
			// The reply does not stop the coalescing of the lines after it.
			{late: busyLag}, {enqueue: []string{d}}, {sleep: coalesceWindow - busyLag}, {resume: true}, {write: []string{d}},
		}},
		{"a full buffer is written without waiting", []coalesceStep{
			{late: busyLag}, {enqueue: []string{a}}, {write: []string{a}}, {idle: true},
			{advance: third}, {late: busyLag},
			{enqueue: big}, {write: big},
		}},
		{"closing right after a write does not wait", []coalesceStep{
			{late: busyLag}, {enqueue: []string{a}}, {write: []string{a}}, {idle: true},
			{advance: third}, {late: busyLag},
			{closeFlush: []string{bye}}, {write: []string{bye}},
			{closed: true},
		}},
		{"closing during the wait writes everything, then closes", []coalesceStep{
			{late: busyLag}, {enqueue: []string{a}}, {write: []string{a}},
			{idle: true},
			{late: busyLag}, {enqueue: []string{b}}, {sleep: coalesceWindow - busyLag},
			{closeFlush: []string{bye}},
			{enqueue: []string{"refused\r\n"}},
			{resume: true}, {write: []string{b, bye}},
			{closed: true},
		}},
		{"closeNow during the wait drops the lines", []coalesceStep{
			{late: busyLag}, {enqueue: []string{a}}, {write: []string{a}},
			{idle: true},
			{late: busyLag}, {enqueue: []string{b}}, {sleep: coalesceWindow - busyLag},
			{closeNow: true}, {closed: true},
			{resume: true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			conn := newBatchConn()
			q := newSendQueueClock(conn, 1<<20, nil, clk)
			closing := false
			for i, s := range tc.steps {
				switch {
				case s.enqueue != nil:
					ok := q.enqueue(toBytes(s.enqueue)...)
					if ok == closing {
						t.Fatalf("step %d: enqueue = %v with closing %v", i, ok, closing)
					}
				case s.reply != nil:
					if ok := q.reply(toBytes(s.reply)...); ok == closing {
						t.Fatalf("step %d: reply = %v with closing %v", i, ok, closing)
					}
				case s.closeFlush != nil:
					q.closeAfterFlush(toBytes(s.closeFlush)...)
					closing = true
				case s.closeNow:
					q.closeNow()
					closing = true
				case s.advance > 0:
					clk.set(func(c *fakeClock) { c.now += s.advance })
				case s.late > 0:
					clk.set(func(c *fakeClock) { c.jump = s.late })
				case s.resumeLag != 0:
					clk.set(func(c *fakeClock) { c.resumeLag = max(0, s.resumeLag) })
				case s.state != "":
					q.mu.Lock()
					busy := q.busy
					q.mu.Unlock()
					if busy != (s.state == "busy") {
						t.Fatalf("step %d: busy = %v, want %s", i, busy, s.state)
					}
				case s.idle:
					awaitWriterExit(t, q)
				case s.write != nil:
					got := awaitValue(t, i, "a write", conn.batches)
					if !slices.Equal(got, s.write) {
						t.Fatalf("step %d: wrote %q, want %q", i, got, s.write)
					}
				case s.sleep > 0:
					if got := awaitValue(t, i, "a wait", clk.slept); got != s.sleep {
						t.Fatalf("step %d: waited %v, want %v", i, got, s.sleep)
					}
				case s.resume:
					clk.resume <- struct{}{}
				case s.closed:
					awaitValue(t, i, "the close", q.whenClosed())
				}
			}
			if !closing {
				q.closeAfterFlush([]byte("end\r\n"))
				if got := awaitValue(t, -1, "the last write", conn.batches); !slices.Equal(got, []string{"end\r\n"}) {
					t.Fatalf("last write %q, want only the closing line", got)
				}
			}
			awaitValue(t, -1, "the close", conn.closed)
			awaitWriterExit(t, q)
			select {
			case extra := <-conn.batches:
				t.Fatalf("unexpected write %q", extra)
			case d := <-clk.slept:
				t.Fatalf("unexpected wait %v", d)
			default:
			}
		})
	}
}

func toBytes(lines []string) [][]byte {
	out := make([][]byte, len(lines))
	for i, l := range lines {
		out[i] = []byte(l)
	}
	return out
}

// awaitValue receives from ch, failing the test if nothing comes within a generous deadline.
func awaitValue[T any](t *testing.T, step int, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("step %d: no %s", step, what)
		panic("unreachable")
	}
}

// awaitWriterExit waits until the queue's writer goroutine has returned.
func awaitWriterExit(t *testing.T, q *sendQueue) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		q.mu.Lock()
		writing := q.writing
		q.mu.Unlock()
		if !writing {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer never exited")
		}
		runtime.Gosched()
	}
}

// TestCoalesceWait checks the rule itself: only a busy queue with a recent write waits, and only
// until coalesceWindow after that write.
func TestCoalesceWait(t *testing.T) {
	const at = 10 * time.Second
	for _, tc := range []struct {
		name      string
		busy      bool
		closing   bool
		bytes     int
		lastWrite time.Duration
		want      time.Duration
	}{
		{"calm", false, false, 10, at - time.Millisecond, 0},
		{"busy, never written", true, false, 10, 0, 0},
		{"busy, just written", true, false, 10, at, coalesceWindow},
		{"busy, written a little earlier", true, false, 10, at - coalesceWindow/4, coalesceWindow * 3 / 4},
		{"busy, window over", true, false, 10, at - coalesceWindow, 0},
		{"busy, clock behind the write", true, false, 10, at + time.Millisecond, 0},
		{"busy, closing", true, true, 10, at, 0},
		{"busy, a full buffer", true, false, coalesceBytes, at, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &sendQueue{busy: tc.busy, closing: tc.closing, bytes: tc.bytes, lastWrite: tc.lastWrite}
			if got := q.coalesceWait(at); got != tc.want {
				t.Errorf("coalesceWait = %v, want %v", got, tc.want)
			}
			q.prompt = true // a reply is queued
			if got := q.coalesceWait(at); got != 0 {
				t.Errorf("coalesceWait with a reply queued = %v, want 0", got)
			}
		})
	}
}
