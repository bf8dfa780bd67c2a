package irc

import "time"

// Write coalescing. A socket write on loopback costs ~4–5 µs of server CPU whatever it carries (the
// kernel runs the receiver's TCP work in the sender's call), so a channel of N members costs N
// writes per message while every member's queue is idle between messages. Holding a member's lines
// for a few milliseconds makes one write carry several, but a fixed hold would delay every line of
// a connection that receives lines often (a closed-loop writer's echo, a relay of a busy room)
// even when the server has CPU to spare. The rule therefore uses the one thing a queue can see of
// the server's load: how late its writer goroutine runs. A writer that runs busyLag or more after
// it was due (started, or woken from a wait) found the runtime's run queues long — hundreds of
// writers queued behind a fan-out, or the process short of CPU — and its queue coalesces: it waits
// until coalesceWindow after its previous write before writing again. A writer that runs on time
// writes at once, so a lightly loaded server adds no latency at all, and a connection that
// receives a line after a quiet moment (longer than the window) never waits. Replies to the
// client's own commands (sendQueue.reply: an echo, a numeric, a labeled response) never wait:
// the client is waiting for them (B11's echoes are measured to the store's commit, and a window
// held them up to coalesceWindow on a loaded machine).
const (
	// busyLag is how late a writer must run for its queue to coalesce.
	busyLag = 1 * time.Millisecond
	// coalesceWindow is the shortest time between the starts of two writes of a coalescing queue,
	// and so the longest a line waits for company. A queue coalesces only when the process is short
	// of CPU, and there the window sets how many writes the server makes (one per member per
	// window) and its members' clients read: at 1,000 members, 20 ms meant 50,000 writes/s, which
	// with the clients' reads kept two cores full at 100 msg/s, and the queueing that followed cost
	// more than the window (B3 p99 60–66 ms at 100 msg/s). 40 ms halves the writes: p99 45–46 ms at
	// 100 msg/s and 82–104 ms instead of 164–193 ms at 800 (BENCHMARKS.md, B3). 30 and 50 ms
	// measured worse at the high and the low rates respectively.
	coalesceWindow = 40 * time.Millisecond
	// coalesceBytes is the queued size at which a queue writes without waiting for its window: one
	// write buffer of the stream transport (16 KiB) is as much as one write carries.
	coalesceBytes = 16 << 10
)

// noteLag updates q.busy from how late the writer runs at now, once per start or wait. q.mu is
// held.
func (q *sendQueue) noteLag(now time.Duration) {
	if q.measure {
		q.busy, q.measure = now-q.due >= busyLag, false
	}
}

// coalesceWait says how long the writer waits before taking the queued lines, at now. q.mu is held.
// A closing queue (QUIT, ERROR), a queue holding coalesceBytes and a queue holding a reply to the
// client's own command write at once.
func (q *sendQueue) coalesceWait(now time.Duration) time.Duration {
	if !q.busy || q.closing || q.prompt || q.bytes >= coalesceBytes || q.lastWrite == 0 {
		return 0
	}
	since := now - q.lastWrite
	if since < 0 || since >= coalesceWindow {
		return 0
	}
	return coalesceWindow - since
}

// clock is the time source of the send queues; tests replace it to drive coalescing without
// real waits. Now is a monotonic reading (it never goes back) and is never zero.
type clock interface {
	Now() time.Duration
	Sleep(d time.Duration)
}

// monotonicEpoch is the origin of systemClock's readings; it is set once, at start.
var monotonicEpoch = time.Now().Add(-time.Second)

// systemClock is the real clock.
type systemClock struct{}

func (systemClock) Now() time.Duration    { return time.Since(monotonicEpoch) }
func (systemClock) Sleep(d time.Duration) { time.Sleep(d) }
