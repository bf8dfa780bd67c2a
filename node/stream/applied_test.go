package stream

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// recordRenderer records what a render queue renders and can hold the renderer at a gate.
type recordRenderer struct {
	mu      sync.Mutex
	indexes []uint64
	resyncs []uint64
	gate    chan struct{} // when set, each render waits for a value
	entered chan uint64   // when set, each render reports its index first
}

func (r *recordRenderer) fn(e Entry) {
	if e.Resync {
		r.resync(e.Index)
		return
	}
	r.render(e.Index)
}

func (r *recordRenderer) render(index uint64) {
	if r.entered != nil {
		r.entered <- index
	}
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	r.indexes = append(r.indexes, index)
	r.mu.Unlock()
}

func (r *recordRenderer) resync(index uint64) {
	r.mu.Lock()
	r.resyncs = append(r.resyncs, index)
	r.indexes = append(r.indexes, index)
	r.mu.Unlock()
}

func (r *recordRenderer) seen() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.indexes)
}

func renderEvents(n int) []fsm.Event { return make([]fsm.Event, n) }

// newQueue returns an Applied stream of limit events with r subscribed (Backpressure).
func newQueue(t *testing.T, limit int, r *recordRenderer) *Applied {
	t.Helper()
	q := NewApplied(AppliedOptions{QueueLimit: limit})
	if err := q.Subscribe("recorder", Backpressure, r.fn); err != nil {
		t.Fatal(err)
	}
	return q
}

func renderTestContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Batches pushed from several goroutines, each in its own order, are rendered in push order, and
// waitRendered of the last index returns only once everything is rendered.
func TestAppliedKeepsOrder(t *testing.T) {
	r := &recordRenderer{}
	q := newQueue(t, 8, r)
	t.Cleanup(q.Close)
	var want []uint64
	for i := uint64(1); i <= 500; i++ {
		if i%100 == 0 {
			q.Restored(i)
		} else {
			q.Publish(i, renderEvents(int(i%3)+1))
		}
		want = append(want, i)
	}
	if err := q.WaitRendered(renderTestContext(t), 500); err != nil {
		t.Fatal(err)
	}
	if got := r.seen(); !slices.Equal(got, want) {
		t.Fatalf("rendered %v…, want 1..500 in order", got[:min(len(got), 20)])
	}
	if len(r.resyncs) != 5 {
		t.Errorf("resyncs %v, want 5", r.resyncs)
	}
}

// A full queue makes push wait (Raft's apply loop is held back) until the renderer catches up;
// nothing is dropped.
func TestAppliedBackPressure(t *testing.T) {
	r := &recordRenderer{gate: make(chan struct{}), entered: make(chan uint64, 16)}
	q := newQueue(t, 5, r)
	t.Cleanup(func() {
		close(r.gate)
		q.Close()
	})
	q.Publish(1, renderEvents(1))
	<-r.entered // the renderer holds batch 1 (its event counts until it is rendered)
	q.Publish(2, renderEvents(2))
	q.Publish(3, renderEvents(2)) // 5 events not rendered yet: full
	pushed := make(chan struct{})
	go func() {
		q.Publish(4, renderEvents(1))
		close(pushed)
	}()
	select {
	case <-pushed:
		t.Fatal("push into a full queue returned before the renderer made room")
	case <-time.After(50 * time.Millisecond): // a blocked push stays blocked; nothing to wait for
	}
	r.gate <- struct{}{} // batch 1 done: room for 4
	<-r.entered
	select {
	case <-pushed:
	case <-time.After(10 * time.Second):
		t.Fatal("push still blocked after the renderer made room")
	}
	for range 3 { // release 2, 3, 4 (entered is buffered: no need to read it)
		r.gate <- struct{}{}
	}
	if err := q.WaitRendered(renderTestContext(t), 4); err != nil {
		t.Fatal(err)
	}
	if got := r.seen(); !slices.Equal(got, []uint64{1, 2, 3, 4}) {
		t.Fatalf("rendered %v", got)
	}
}

// waitRendered waits for the batches at or below its index only, including the one being rendered,
// and returns at once for an index whose entry had no events.
func TestAppliedWaitRendered(t *testing.T) {
	r := &recordRenderer{gate: make(chan struct{}), entered: make(chan uint64, 16)}
	q := newQueue(t, 0, r)
	t.Cleanup(q.Close)
	if err := q.WaitRendered(renderTestContext(t), 3); err != nil { // nothing queued: rendered
		t.Fatal(err)
	}
	q.Publish(5, renderEvents(1))
	q.Publish(7, renderEvents(1))
	<-r.entered                                                     // 5 is being rendered
	if err := q.WaitRendered(renderTestContext(t), 4); err != nil { // nothing at or below 4
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := q.WaitRendered(short, 5); err == nil {
		t.Fatal("waitRendered(5) returned while 5 was being rendered")
	}
	done := make(chan error, 1)
	go func() { done <- q.WaitRendered(renderTestContext(t), 6) }()
	r.gate <- struct{}{} // 5 done
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := r.seen(); !slices.Equal(got, []uint64{5}) {
		t.Errorf("waitRendered(6) returned after %v, want after 5 only", got)
	}
	<-r.entered
	r.gate <- struct{}{}
	if err := q.WaitRendered(renderTestContext(t), 7); err != nil {
		t.Fatal(err)
	}
}

// close releases waiters and pushers; later pushes return at once.
func TestAppliedClose(t *testing.T) {
	r := &recordRenderer{gate: make(chan struct{}), entered: make(chan uint64, 16)}
	q := newQueue(t, 2, r)
	q.Publish(1, renderEvents(1))
	<-r.entered
	q.Publish(2, renderEvents(1))
	blocked := make(chan struct{})
	go func() {
		q.Publish(3, renderEvents(1)) // full: waits
		close(blocked)
	}()
	waited := make(chan error, 1)
	go func() { waited <- q.WaitRendered(renderTestContext(t), 3) }()
	closed := make(chan struct{})
	go func() {
		q.Close()
		close(closed)
	}()
	close(r.gate) // let the renderer finish what it holds so close can return
	<-closed
	<-blocked
	if err := <-waited; err != nil {
		t.Errorf("waiter after close: %v", err)
	}
	q.Publish(4, renderEvents(1))
}
