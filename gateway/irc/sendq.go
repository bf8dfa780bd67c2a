package irc

import (
	"sync"
	"time"

	"github.com/palaver-chat/palaver/gateway/transport"
)

// spareLines bounds the line slice a queue keeps between writes for reuse, so an idle connection
// holds at most this many slots.
const spareLines = 8

// sendQueue is a connection's bounded output queue. Enqueue never blocks: lines are appended and a
// writer goroutine, which exists only while there is data, drains them with one vectored write. A
// queue that grows past its byte budget is closed and the overflow callback disconnects the client.
//
// Writes are coalesced while the server is busy (sendq_coalesce.go): a queue whose writer ran late
// waits until coalesceWindow after its previous write, so that one write carries every line queued
// meanwhile; otherwise every line is written as soon as the writer runs.
type sendQueue struct {
	// lock tier 7: takes nothing
	mu    sync.Mutex
	conn  transport.Conn
	clock clock
	// lastWrite is when the previous write began, due when the writer was due to run (started or
	// woken).
	lastWrite time.Duration
	due       time.Duration
	lines     [][]byte
	spare     [][]byte // the last written batch, cleared, reused by the next enqueue
	bytes     int
	limit     int
	writing   bool
	prompt    bool // a reply is queued: the next write does not wait to coalesce
	closing   bool // close the connection once drained
	closed    bool
	measure   bool // due is set and not yet compared with the time the writer ran
	busy      bool // the writer last ran busyLag or more late: coalesce
	overflow  func()
	// done is closed when the connection is closed by the queue; it is made on first use (an idle
	// connection does not need one), and signalled says whether it is due closed.
	done      chan struct{}
	signalled bool
	over      bool // closed because the budget was exceeded
}

func newSendQueue(conn transport.Conn, limit int, overflow func()) *sendQueue {
	return newSendQueueClock(conn, limit, overflow, systemClock{})
}

func newSendQueueClock(conn transport.Conn, limit int, overflow func(), clk clock) *sendQueue {
	return &sendQueue{conn: conn, limit: limit, overflow: overflow, clock: clk}
}

// enqueue appends lines; it reports false when the queue is closed or just overflowed.
func (q *sendQueue) enqueue(lines ...[]byte) bool { return q.add(false, lines) }

// post queues one fanned-out line, like enqueue. When the queue is idle and its writer would
// write at once (not coalescing: coalesceWait), the calling goroutine writes the line itself
// with a write that never waits for the socket (transport.TryWriter), instead of starting the
// queue's writer goroutine for it; whatever the socket does not take at once is left to that
// goroutine, so a slow client never holds up the caller. A fan-out to a few members posts with
// inline set; a large one does not, so that its writes are spread over the writer goroutines
// (and the cores) rather than made one after another by the sender.
func (q *sendQueue) post(line []byte, inline bool) bool {
	if !inline {
		return q.add(false, [][]byte{line})
	}
	tw, ok := q.conn.(transport.TryWriter)
	if !ok {
		return q.add(false, [][]byte{line})
	}
	q.mu.Lock()
	if q.writing || len(q.lines) > 0 || q.closed || q.closing || len(line) > q.limit {
		q.mu.Unlock()
		return q.add(false, [][]byte{line})
	}
	now := q.clock.Now()
	if q.coalesceWait(now) > 0 {
		q.mu.Unlock()
		return q.add(false, [][]byte{line})
	}
	q.writing, q.lastWrite = true, now
	q.mu.Unlock()
	q.writeInline(tw, line)
	return true
}

// writeInline writes line with tw while the caller holds the writer's role (q.writing), then
// hands whatever is left — the part of line the socket did not take, lines queued meanwhile, a
// close — to the writer goroutine.
func (q *sendQueue) writeInline(tw transport.TryWriter, line []byte) {
	n, err := tw.TryWrite(line)
	q.mu.Lock()
	if err != nil {
		q.writeFailed()
		return
	}
	if q.closed { // closeNow or exceed ran meanwhile: nothing more to write
		q.writing = false
		q.mu.Unlock()
		return
	}
	if n < len(line) { // the rest goes first; most often nothing was queued meanwhile
		if len(q.lines) == 0 {
			if q.lines == nil && q.spare != nil {
				q.lines, q.spare = q.spare, nil
			}
			q.lines = append(q.lines, line[n:])
		} else {
			q.lines = append([][]byte{line[n:]}, q.lines...)
		}
		q.bytes += len(line) - n
	}
	if len(q.lines) == 0 && !q.closing {
		q.writing = false
		q.mu.Unlock()
		return
	}
	q.due, q.measure = q.clock.Now(), true
	q.mu.Unlock()
	go q.drain()
}

// reply is enqueue for the replies to the client's own command (its echoes, numerics, labeled
// responses): the client is waiting for them, so the writer's next write does not wait to
// coalesce. Lines queued before them go in the same write. A writer already waiting when they
// arrive writes them when its wait ends.
func (q *sendQueue) reply(lines ...[]byte) bool { return q.add(true, lines) }

func (q *sendQueue) add(prompt bool, lines [][]byte) bool {
	q.mu.Lock()
	if q.closed || q.closing {
		q.mu.Unlock()
		return false
	}
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	if q.bytes+n > q.limit {
		q.mu.Unlock()
		q.exceed()
		return false
	}
	if q.lines == nil && q.spare != nil {
		q.lines, q.spare = q.spare, nil
	}
	q.lines = append(q.lines, lines...)
	q.bytes += n
	q.prompt = q.prompt || prompt
	q.start()
	q.mu.Unlock()
	return true
}

// start starts the writer goroutine unless it runs. q.mu is held.
func (q *sendQueue) start() {
	if !q.writing {
		q.writing = true
		q.due, q.measure = q.clock.Now(), true
		go q.drain()
	}
}

func (q *sendQueue) drain() {
	for {
		q.mu.Lock()
		if len(q.lines) == 0 || q.closed {
			q.writing = false
			closeNow := q.closing && !q.closed
			if closeNow {
				q.closed = true
			}
			q.mu.Unlock()
			if closeNow {
				q.conn.Close()
				q.signalDone()
			}
			return
		}
		now := q.clock.Now()
		q.noteLag(now)
		if wait := q.coalesceWait(now); wait > 0 {
			q.due, q.measure = now+wait, true
			q.mu.Unlock()
			q.clock.Sleep(wait)
			continue
		}
		q.lastWrite = now
		batch := q.lines
		q.lines, q.bytes, q.prompt = nil, 0, false
		q.mu.Unlock()
		err := q.conn.WriteLines(batch)
		clear(batch)
		q.mu.Lock()
		if err != nil {
			q.writeFailed()
			return
		}
		if cap(batch) <= spareLines && q.spare == nil {
			q.spare = batch[:0]
		}
		q.mu.Unlock()
	}
}

// writeFailed closes the queue and the connection after a failed write by the writer. q.mu is
// held and is released.
func (q *sendQueue) writeFailed() {
	q.closed = true
	q.lines, q.spare, q.bytes, q.writing = nil, nil, 0, false
	q.mu.Unlock()
	q.conn.Close()
	q.signalDone()
}

// closeAfterFlush writes what is queued (plus lines) and then closes the connection.
func (q *sendQueue) closeAfterFlush(lines ...[]byte) {
	q.mu.Lock()
	if q.closed || q.closing {
		q.mu.Unlock()
		return
	}
	q.lines = append(q.lines, lines...)
	q.closing = true
	q.start()
	q.mu.Unlock()
}

// closeNow drops pending output and closes the connection.
func (q *sendQueue) closeNow() {
	q.mu.Lock()
	q.closed = true
	q.lines, q.spare, q.bytes = nil, nil, 0
	q.mu.Unlock()
	go q.conn.Close()
	q.signalDone()
}

func (q *sendQueue) signalDone() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.signalled {
		return
	}
	q.signalled = true
	if q.done != nil {
		close(q.done)
	}
}

// whenClosed returns a channel that is closed once the queue has closed the connection.
func (q *sendQueue) whenClosed() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.done == nil {
		q.done = make(chan struct{})
		if q.signalled {
			close(q.done)
		}
	}
	return q.done
}

// exceed closes the queue because its client fell too far behind.
func (q *sendQueue) exceed() {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.closed, q.over = true, true
	q.lines, q.spare, q.bytes = nil, nil, 0
	q.mu.Unlock()
	// Closing may block (a WebSocket close handshake): never on the sender's goroutine.
	go q.conn.Close()
	q.signalDone()
	if q.overflow != nil {
		q.overflow()
	}
}

// overflowed reports whether the queue was closed for exceeding its budget.
func (q *sendQueue) overflowed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.over
}
