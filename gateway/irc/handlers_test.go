package irc

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// newTestPool returns a pool whose parks and ends are signalled on the returned channels.
func newTestPool() (p *handlerPool, parked, ended chan struct{}) {
	parked, ended = make(chan struct{}, 1024), make(chan struct{}, 1024)
	p = &handlerPool{
		onPark: func() { parked <- struct{}{} },
		onEnd:  func() { ended <- struct{}{} },
	}
	return p, parked, ended
}

func (p *handlerPool) parkedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.parked)
}

// runHeld starts n functions at once that return when release is closed.
func runHeld(p *handlerPool, n int) (release func()) {
	gate := make(chan struct{})
	var started sync.WaitGroup
	started.Add(n)
	for range n {
		p.run(func() {
			started.Done()
			<-gate
		})
	}
	started.Wait()
	return func() { close(gate) }
}

func TestHandlerPoolReusesAParkedHandler(t *testing.T) {
	p, parked, _ := newTestPool()
	var ran atomic.Int32
	p.run(func() { ran.Add(1) })
	<-parked
	if got := p.parkedCount(); got != 1 {
		t.Fatalf("parked after the first run: %d, want 1", got)
	}
	hold := make(chan struct{})
	p.run(func() { ran.Add(1); <-hold }) // held, so that it cannot park again before the count
	if got := p.parkedCount(); got != 0 {
		t.Fatalf("parked while the second run runs: %d, want 0 (the parked handler took it)", got)
	}
	close(hold)
	<-parked
	if got := p.parkedCount(); got != 1 {
		t.Fatalf("parked after the second run: %d, want 1 (no second handler)", got)
	}
	if ran.Load() != 2 {
		t.Fatalf("ran %d functions, want 2", ran.Load())
	}
}

func TestHandlerPoolStartsHandlersWhileAllAreBusy(t *testing.T) {
	p, parked, _ := newTestPool()
	release := runHeld(p, 4) // each held run needs a handler of its own
	release()
	for range 4 {
		<-parked
	}
	if got := p.parkedCount(); got != 4 {
		t.Fatalf("parked: %d, want 4", got)
	}
}

func TestHandlerPoolExpire(t *testing.T) {
	base := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		cutoff time.Time
		want   int
	}{
		{"none parked long enough", base, 0},
		{"the two oldest", base.Add(2 * time.Second), 2},
		{"all", base.Add(time.Hour), 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, parked, ended := newTestPool()
			runHeld(p, 3)()
			for range 3 {
				<-parked
			}
			p.mu.Lock()
			for i, h := range p.parked { // parked 1 s apart, oldest first
				h.since = base.Add(time.Duration(i) * time.Second)
			}
			p.mu.Unlock()
			if got := p.expire(tt.cutoff); got != tt.want {
				t.Fatalf("expire ended %d, want %d", got, tt.want)
			}
			for range tt.want {
				<-ended
			}
			if got := p.parkedCount(); got != 3-tt.want {
				t.Fatalf("still parked: %d, want %d", got, 3-tt.want)
			}
			p.mu.Lock()
			for _, h := range p.parked {
				if h.since.Before(tt.cutoff) {
					t.Errorf("a handler parked at %s outlived the cutoff %s", h.since, tt.cutoff)
				}
			}
			p.mu.Unlock()
		})
	}
}

func TestHandlerPoolClose(t *testing.T) {
	p, parked, ended := newTestPool()
	p.run(func() {})
	<-parked
	release := runHeld(p, 1) // takes the parked handler
	p.run(func() {})         // a second handler, which parks
	<-parked
	p.close()
	<-ended // the parked one ends at once
	release()
	<-ended // the running one ends after its function instead of parking
	if got := p.parkedCount(); got != 0 {
		t.Fatalf("parked after close: %d, want 0", got)
	}
	done := make(chan struct{})
	p.run(func() { close(done) }) // later runs still run, each on a goroutine of its own
	<-done
	<-ended
}

func TestHandlerPoolRunAndWait(t *testing.T) {
	p, _, _ := newTestPool()
	var ran bool
	p.runAndWait(func() { ran = true }) // no data race: runAndWait returns after f
	if !ran {
		t.Fatal("runAndWait returned before its function ran")
	}
}

// TestHandlerPoolConcurrentRuns has many goroutines run through one pool at once (under -race).
func TestHandlerPoolConcurrentRuns(t *testing.T) {
	p := &handlerPool{}
	const callers, each = 32, 200
	var ran atomic.Int64
	var wg sync.WaitGroup
	wg.Add(callers * each)
	for range callers {
		go func() {
			for range each {
				p.run(func() {
					ran.Add(1)
					wg.Done()
				})
			}
		}()
	}
	wg.Wait()
	if ran.Load() != callers*each {
		t.Fatalf("ran %d, want %d", ran.Load(), callers*each)
	}
	p.close()
}

func TestHandlerPoolParksAtMostMaxParked(t *testing.T) {
	p, parked, ended := newTestPool()
	extra := 3
	runHeld(p, maxParkedHandlers+extra)()
	for range maxParkedHandlers {
		<-parked
	}
	for range extra {
		<-ended
	}
	if got := p.parkedCount(); got != maxParkedHandlers {
		t.Fatalf("parked: %d, want %d", got, maxParkedHandlers)
	}
}
