package stream

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/node/eventstore"
)

// A DropAndResync subscriber held at a gate never makes the publisher wait: its queue is replaced
// by one resync at the newest index, while a Backpressure subscriber beside it gets every entry.
func TestAppliedSlowDropSubscriberNeverStalls(t *testing.T) {
	a := NewApplied(AppliedOptions{QueueLimit: 4})
	t.Cleanup(a.Close)
	fast := &recordRenderer{}
	slow := &recordRenderer{gate: make(chan struct{}), entered: make(chan uint64, 1024)}
	if err := a.Subscribe("fast", Backpressure, fast.fn); err != nil {
		t.Fatal(err)
	}
	if err := a.Subscribe("slow", DropAndResync, slow.fn); err != nil {
		t.Fatal(err)
	}
	a.Publish(1, renderEvents(1))
	<-slow.entered // slow holds entry 1
	published := make(chan struct{})
	go func() {
		for i := uint64(2); i <= 100; i++ {
			a.Publish(i, renderEvents(1))
		}
		close(published)
	}()
	select {
	case <-published:
	case <-time.After(10 * time.Second):
		t.Fatal("publishing was stalled by a DropAndResync subscriber")
	}
	if err := a.WaitRendered(renderTestContext(t), 100); err != nil {
		t.Fatal(err)
	}
	want := make([]uint64, 100)
	for i := range want {
		want[i] = uint64(i + 1)
	}
	if got := fast.seen(); !slices.Equal(got, want) {
		t.Fatalf("backpressure subscriber saw %d entries, want 1..100", len(got))
	}
	close(slow.gate)
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := slow.seen()
		if len(got) > 0 && got[len(got)-1] == 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slow subscriber saw %v, want to end at 100", got)
		}
		time.Sleep(time.Millisecond)
	}
	slow.mu.Lock()
	resyncs := slices.Clone(slow.resyncs)
	slow.mu.Unlock()
	if len(resyncs) == 0 {
		t.Fatal("slow subscriber got no resync after its queue overflowed")
	}
	var dropped uint64
	for _, s := range a.Stats() {
		if s.Name == "slow" {
			dropped = s.Dropped
		}
	}
	if dropped == 0 {
		t.Error("Stats reports no drop for the slow subscriber")
	}
}

// A panic in a subscriber is followed by a resync at the entry that panicked; the subscriber and
// the others keep receiving.
func TestAppliedPanicResyncs(t *testing.T) {
	var armed sync.Once
	a := NewApplied(AppliedOptions{BeforeDeliver: func(sub string, e Entry) {
		if sub == "victim" && e.Index == 2 && !e.Resync {
			armed.Do(func() { panic("injected") })
		}
	}})
	t.Cleanup(a.Close)
	victim, other := &recordRenderer{}, &recordRenderer{}
	for name, r := range map[string]*recordRenderer{"victim": victim, "other": other} {
		if err := a.Subscribe(name, Backpressure, r.fn); err != nil {
			t.Fatal(err)
		}
	}
	for i := uint64(1); i <= 3; i++ {
		a.Publish(i, renderEvents(1))
	}
	if err := a.WaitRendered(renderTestContext(t), 3); err != nil {
		t.Fatal(err)
	}
	if got := victim.seen(); !slices.Equal(got, []uint64{1, 2, 3}) || !slices.Equal(victim.resyncs, []uint64{2}) {
		t.Errorf("victim saw %v with resyncs %v, want 1 2(resync) 3", got, victim.resyncs)
	}
	if got := other.seen(); !slices.Equal(got, []uint64{1, 2, 3}) || len(other.resyncs) != 0 {
		t.Errorf("other saw %v with resyncs %v", got, other.resyncs)
	}
}

func TestSubscribeRefusals(t *testing.T) {
	a := NewApplied(AppliedOptions{})
	s := NewStored(StoredOptions{})
	if err := a.Subscribe("x", Backpressure, func(Entry) {}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		err  error
	}{
		{"duplicate name", a.Subscribe("x", Backpressure, func(Entry) {})},
		{"nil function", a.Subscribe("y", Backpressure, nil)},
		{"unknown mode", a.Subscribe("z", Mode(7), func(Entry) {})},
		{"unknown source", s.Subscribe("w", Backpressure, func(Item) {}, Source(9))},
	}
	for _, tc := range cases {
		if tc.err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	a.Close()
	if err := a.Subscribe("late", Backpressure, func(Entry) {}); err == nil {
		t.Error("subscribe after Close: accepted")
	}
	a.Publish(1, renderEvents(1)) // after Close: returns at once
}

// itemRecorder records the items a Stored subscriber gets.
type itemRecorder struct {
	mu    sync.Mutex
	items []Item
}

func (r *itemRecorder) fn(it Item) {
	r.mu.Lock()
	r.items = append(r.items, it)
	r.mu.Unlock()
}

func (r *itemRecorder) waitFor(t *testing.T, n int) []Item {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		got := slices.Clone(r.items)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d items, want %d", len(got), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Subscribers get the sources they asked for, in publish order, each kind in its field.
func TestStoredSourcesAndOrder(t *testing.T) {
	s := NewStored(StoredOptions{})
	t.Cleanup(s.Close)
	all, remote := &itemRecorder{}, &itemRecorder{}
	if err := s.Subscribe("all", Backpressure, all.fn); err != nil {
		t.Fatal(err)
	}
	if err := s.Subscribe("remote", Backpressure, remote.fn, Cluster, Federation); err != nil {
		t.Fatal(err)
	}
	s.PublishMessage(Local, eventstore.Message{MsgID: "a", Venue: "#c"})
	s.PublishDeletion(Cluster, eventstore.Deletion{RootMsgID: "a", Venue: "#c"})
	s.PublishReaction(Federation, eventstore.ReactionEvent{EventID: "r", Venue: "#d"})
	s.PublishEphemeral(Local, eventstore.Message{MsgID: "t", Venue: "#c", Command: "TAGMSG"})
	got := all.waitFor(t, 4)
	kinds := []Kind{got[0].Kind, got[1].Kind, got[2].Kind, got[3].Kind}
	if !slices.Equal(kinds, []Kind{KindMessage, KindDeletion, KindReaction, KindEphemeral}) {
		t.Errorf("kinds %v", kinds)
	}
	if got[0].Venue() != "#c" || got[2].Venue() != "#d" || got[1].Deletion.RootMsgID != "a" {
		t.Errorf("items %+v", got)
	}
	r := remote.waitFor(t, 2)
	if len(r) != 2 || r[0].Source != Cluster || r[1].Source != Federation {
		t.Errorf("remote subscriber got %+v, want the cluster and federation items only", r)
	}
}

// A DropAndResync Stored subscriber that falls behind gets a Gap marker; publishing never waits.
func TestStoredDropGap(t *testing.T) {
	s := NewStored(StoredOptions{QueueLimit: 2})
	t.Cleanup(s.Close)
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	rec := &itemRecorder{}
	if err := s.Subscribe("slow", DropAndResync, func(it Item) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-gate
		rec.fn(it)
	}); err != nil {
		t.Fatal(err)
	}
	s.PublishMessage(Local, eventstore.Message{MsgID: "0"})
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		for range 10 {
			s.PublishMessage(Local, eventstore.Message{MsgID: "m"})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("publish waited for a DropAndResync subscriber")
	}
	close(gate)
	got := rec.waitFor(t, 2)
	gaps := 0
	for _, it := range got {
		if it.Gap {
			gaps++
		}
	}
	if gaps == 0 {
		t.Errorf("no gap among %d items", len(got))
	}
}
