package chat

import (
	"context"
	"testing"

	"github.com/palaver-chat/palaver/federation/eventstore"
)

func msgIn(venue string) *eventstore.Message { return &eventstore.Message{Venue: venue} }

// Each message is stamped with the lowest seq of its venue that may still be delivered after
// it: a stored message not yet delivered, or the first seq an Append in flight may take.
func TestDeliveriesStamp(t *testing.T) {
	d := &deliveries{known: 10}
	stamp := func(venue string) int64 {
		m := msgIn(venue)
		d.stored(d.begin([]*eventstore.Message{m}), nil) // an Append that stored nothing
		return m.ResumeFrom
	}
	steps := []struct {
		name string
		do   func()
		c, o int64 // the stamps of a message of #c and of #o then
	}{
		{"nothing in flight", func() {}, 11, 11},
		{"#c's 11 and 12 stored, not delivered", func() {
			a, b := msgIn("#c"), msgIn("#c")
			t := d.begin([]*eventstore.Message{a, b})
			a.Seq, b.Seq = 11, 12
			d.stored(t, []*eventstore.Message{a, b})
		}, 11, 13},
		{"11 delivered", func() { d.deliveredStamps([]stamped{{"#c", 11}}) }, 12, 13},
		{"12 delivered", func() { d.deliveredStamps([]stamped{{"#c", 12}}) }, 13, 13},
		{"an Append of #o in flight", func() { d.begin([]*eventstore.Message{msgIn("#o")}) }, 13, 13},
		{"#o's 13 stored by another Append", func() {
			m := msgIn("#o")
			t := d.begin([]*eventstore.Message{m})
			m.Seq = 13
			d.stored(t, []*eventstore.Message{m})
		}, 14, 13},
	}
	for _, st := range steps {
		st.do()
		if c, o := stamp("#c"), stamp("#o"); c != st.c || o != st.o {
			t.Fatalf("after %s: #c stamped %d, #o %d; want %d, %d", st.name, c, o, st.c, st.o)
		}
	}
}

// Messages published from a peer count as delivered once the Stored stream's subscribers have
// handled them, not before.
func TestDeliveriesWaitForTheSubscribers(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	d := &deliveries{known: 4, sync: func(context.Context) error {
		close(entered)
		<-release
		return nil
	}}
	m := msgIn("#c")
	tk := d.begin([]*eventstore.Message{m})
	m.Seq = 5
	d.stored(tk, []*eventstore.Message{m})
	d.deliveredWhenHandled([]*eventstore.Message{m})
	<-entered
	next := msgIn("#c")
	d.stored(d.begin([]*eventstore.Message{next}), nil)
	if next.ResumeFrom != 5 {
		t.Fatalf("while the subscribers handle 5, a message is stamped %d, want 5", next.ResumeFrom)
	}
	d.mu.Lock()
	watching := d.watching
	d.mu.Unlock()
	close(release)
	<-watching
	d.stored(d.begin([]*eventstore.Message{next}), nil)
	if next.ResumeFrom != 6 {
		t.Fatalf("once handled, a message is stamped %d, want 6", next.ResumeFrom)
	}
}
