package irc

import (
	"context"
	"sync"
	"time"
)

// Commands are handled on pooled goroutines. A connection's reader hands each line to another
// goroutine (readLoop), and a connection's pipeline runs on one while messages are in flight; both
// go deep (proposals, the store, rendering, fan-out). A new goroutine starts with the runtime's
// small stack and grows it by copying it, twice or three times, on every such run: at 4,000 msg/s
// of B4 that copying alone was 5.7 % of the server's CPU. A handler of the pool keeps its grown
// stack between runs. Parked handlers are taken most recently parked first, so a busy server keeps
// reusing the same few warm ones. At most maxParkedHandlers are parked, and a handler parked for
// handlerIdle ends, so an idle server holds none (the readers of idle connections stay at the
// smallest stack: benchmark B1).

const (
	// handlerIdle is how long a handler stays parked before it ends.
	handlerIdle = 2 * time.Second
	// maxParkedHandlers bounds the parked handlers, and so the memory their stacks hold (16–32 KiB
	// each) after a burst, such as thousands of connections registering at once. A handler that
	// finishes while this many are parked ends. Under steady load the handlers in use at once
	// number far fewer: a pipeline's run lasts one store commit.
	maxParkedHandlers = 32
)

// handlerPool runs functions on parked handler goroutines, starting one when none is parked.
type handlerPool struct {
	// lock tier 9 (leaf)
	mu     sync.Mutex
	parked []*pooledHandler // the most recently parked last
	closed bool             // handlers end instead of parking
	onPark func()           // tests: called after a handler parked
	onEnd  func()           // tests: called when a handler ends
}

// pooledHandler is one pooled goroutine. Its job channel holds one slot, so a run never waits for
// the handler to reach its receive.
type pooledHandler struct {
	job   chan func() // nil: end
	since time.Time   // when it parked
}

// run runs f on a parked handler, or on a new goroutine when none is parked. It does not wait for
// f.
func (p *handlerPool) run(f func()) {
	p.mu.Lock()
	if n := len(p.parked); n > 0 {
		h := p.parked[n-1]
		p.parked[n-1] = nil
		p.parked = p.parked[:n-1]
		p.mu.Unlock()
		h.job <- f
		return
	}
	p.mu.Unlock()
	h := &pooledHandler{job: make(chan func(), 1)}
	h.job <- f
	go p.serve(h)
}

// runAndWait runs f on a handler and returns once it has.
func (p *handlerPool) runAndWait(f func()) {
	done := make(chan struct{})
	p.run(func() {
		defer close(done)
		f()
	})
	<-done
}

func (p *handlerPool) serve(h *pooledHandler) {
	if p.onEnd != nil {
		defer p.onEnd()
	}
	for f := range h.job {
		if f == nil {
			return
		}
		f()
		if !p.park(h) {
			return
		}
	}
}

// park puts h back among the parked handlers; false when it is to end instead (the pool is
// closed, or holds maxParkedHandlers).
func (p *handlerPool) park(h *pooledHandler) bool {
	h.since = time.Now()
	p.mu.Lock()
	if p.closed || len(p.parked) >= maxParkedHandlers {
		p.mu.Unlock()
		return false
	}
	p.parked = append(p.parked, h)
	hook := p.onPark
	p.mu.Unlock()
	if hook != nil {
		hook()
	}
	return true
}

// expire ends the handlers parked before cutoff (they are the first in the list) and returns how
// many it ended.
func (p *handlerPool) expire(cutoff time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for n < len(p.parked) && p.parked[n].since.Before(cutoff) {
		p.parked[n].job <- nil
		p.parked[n] = nil
		n++
	}
	p.parked = append(p.parked[:0], p.parked[n:]...)
	return n
}

// close ends every parked handler; a running one ends when its function returns, and later runs
// each have a goroutine of their own.
func (p *handlerPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for i, h := range p.parked {
		h.job <- nil
		p.parked[i] = nil
	}
	p.parked = nil
}

// expireEvery ends idle handlers every tick until ctx ends, then closes the pool.
func (p *handlerPool) expireEvery(ctx context.Context, every, idle time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			p.close()
			return
		case now := <-t.C:
			p.expire(now.Add(-idle))
		}
	}
}
