package chat

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/stream"
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

// syncedPublisher is a Stored stream whose subscribers are held: Sync returns once released.
type syncedPublisher struct {
	published
	release chan struct{}
}

func (p *syncedPublisher) Sync(ctx context.Context) error {
	select {
	case <-p.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Through the service and the store: a local message stored while a peer's message, stored
// before it, is still on its way to the readers resumes from that message; once the readers have
// it, the next local message resumes right after itself. Commit delivers each write after the
// commit and counts it delivered after its Deliver ran.
func TestServiceStampsWhatIsNotYetDelivered(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	first := f.send(Draft{Sender: f.op, Command: "PRIVMSG", Venue: "#c", Text: "before"})
	pub := &syncedPublisher{release: make(chan struct{})}
	svc := New(Config{State: f.state, Store: f.store, Key: f.key, Stored: pub, NodeName: "n1", Logger: f.svc.log})
	if svc.dl.known != first.Event.Seq {
		t.Fatalf("a new service starts from seq %d, want the store's greatest, %d", svc.dl.known, first.Event.Seq)
	}
	peer := remoteMessage("n2", "#c", "", "bob", "from a peer", "")
	if _, err := svc.AcceptRemote(ctx, Source{Kind: stream.Cluster, Ordered: true}, Batch{Messages: []*eventstore.Message{peer}}); err != nil {
		t.Fatal(err)
	}
	commit := func(text string) (*Write, int64) {
		w, r := svc.Prepare(ctx, Draft{Sender: f.op, Command: "PRIVMSG", Venue: "#c", Text: text})
		if r != nil {
			t.Fatal(r)
		}
		var during int64 // what a message stored while w is being delivered is stamped with
		w.Deliver = func() {
			m := msgIn("#c")
			svc.dl.stored(svc.dl.begin([]*eventstore.Message{m}), nil)
			during = m.ResumeFrom
		}
		if r := svc.Commit(ctx, w)[0]; r != nil {
			t.Fatal(r)
		}
		return w, during
	}
	local, during := commit("local, after the peer's")
	if during != peer.Seq {
		t.Errorf("while delivering, a message is stamped %d, want the peer's %d (still undelivered)", during, peer.Seq)
	}
	page, err := f.store.ResumeAfter(ctx, "#c", local.Event.MsgID, 10)
	if err != nil || len(page) != 1 || page[0].MsgID != peer.MsgID {
		t.Fatalf("resuming after the local message = %v, %v; want the peer's message", page, err)
	}
	svc.dl.mu.Lock()
	watching := svc.dl.watching
	svc.dl.mu.Unlock()
	close(pub.release)
	<-watching
	later, during := commit("local, once the readers have everything")
	if during != later.Event.Seq {
		t.Errorf("while delivering its own message, a message is stamped %d, want %d", during, later.Event.Seq)
	}
	if page, err := f.store.ResumeAfter(ctx, "#c", later.Event.MsgID, 10); err != nil || len(page) != 0 {
		t.Fatalf("resuming after the newest = %v, %v; want nothing", page, err)
	}
}

// Commit runs AfterDeliver once every written write's Deliver ran, for the written writes only,
// in their order, and before their messages count as delivered.
func TestCommitRunsAfterDeliverLast(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	prepare := func(text string) *Write {
		w, r := f.svc.Prepare(ctx, Draft{Sender: f.op, Command: "PRIVMSG", Venue: "#c", Text: text})
		if r != nil {
			t.Fatal(r)
		}
		return w
	}
	stored := prepare("stored before")
	if r := f.svc.Commit(ctx, stored)[0]; r != nil {
		t.Fatal(r)
	}
	again := prepare("a msgid already stored")
	again.Event.MsgID = stored.Event.MsgID
	writes := []*Write{prepare("one"), again, prepare("two")}
	var got []string
	var during int64 // what a message stored during the first AfterDeliver is stamped with
	for i, w := range writes {
		name := strconv.Itoa(i)
		w.Deliver = func() { got = append(got, "deliver "+name) }
		w.AfterDeliver = func() {
			if len(got) == 2 {
				m := msgIn("#c")
				f.svc.dl.stored(f.svc.dl.begin([]*eventstore.Message{m}), nil)
				during = m.ResumeFrom
			}
			got = append(got, "after "+name)
		}
	}
	refusals := f.svc.Commit(ctx, writes...)
	if refusals[0] != nil || refusals[1] == nil || refusals[1].Code != "EVENTID_IN_USE" || refusals[2] != nil {
		t.Fatalf("refusals %v, want only the second (EVENTID_IN_USE)", refusals)
	}
	if want := []string{"deliver 0", "deliver 2", "after 0", "after 2"}; !slices.Equal(got, want) {
		t.Fatalf("calls %q, want %q", got, want)
	}
	if during != writes[0].Event.Seq {
		t.Errorf("during AfterDeliver a message is stamped %d, want the first write's seq %d (not yet delivered)", during, writes[0].Event.Seq)
	}
}
