package chat

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/palaver-chat/palaver/node/eventstore"
)

// Where a reader who resumes after a message starts.
//
// A node stores messages in seq order (commit order), but delivers them to its readers in
// another: a message of one of its own clients is delivered by its caller as soon as Commit
// returns (Write.Deliver), one from a peer when the Stored stream's subscribers get to it. So a
// message stored from a peer can reach a reader after a newer local one, and a reader who read
// the newer one and then lost its connection would not find the older one after it (AFTER
// msgid=). The service therefore keeps, per venue, which stored messages are not yet delivered,
// and stamps each message it stores with the lowest seq of its venue that may still be
// delivered after it (eventstore.Message.ResumeFrom): the store reads a resuming reader's page
// from there (eventstore.Store.ResumeAfter). The record is in memory: after a restart nothing
// stored before is delivered live any more, and the rows stored before the restart keep what
// they were stamped with.
//
// A message's own seq is not known before its commit, so an Append in flight counts too: its
// rows will get seqs above the greatest seq known when it began. The stamp is taken before the
// message's own Append, so it is at most what it would be at its delivery: it can only make a
// resuming reader read more (a copy it already has), never less.

// deliveries is the service's record of stored messages not yet delivered.
type deliveries struct {
	// sync, when set, returns once the Stored stream's subscribers have handled every item
	// published before the call (stream.Stored.Sync).
	sync func(context.Context) error

	mu         sync.Mutex // lock tier 9 (leaf)
	known      int64      // the greatest seq an Append returned (or the store held at start)
	nextTicket uint64
	venues     map[string]*venueDeliveries
	handed     []stamped     // published from peers, waiting for the subscribers (watch)
	watching   chan struct{} // while a watch runs: closed when it returns
}

// venueDeliveries is one venue's messages in flight.
type venueDeliveries struct {
	pending []int64 // stored, not yet delivered; ascending
	// appends are the Appends in flight, by ticket id (ascending): their rows get seqs above
	// known. known never decreases, so the first one's is the least.
	appends []inFlight
}

type inFlight struct {
	id    uint64
	known int64
}

// stamped is a stored message's venue and seq.
type stamped struct {
	venue string
	seq   int64
}

// ticket is one Append in flight.
type ticket struct {
	id     uint64
	venues []string
}

func (d *deliveries) venue(v string) *venueDeliveries {
	vd := d.venues[v]
	if vd == nil {
		vd = &venueDeliveries{}
		if d.venues == nil {
			d.venues = map[string]*venueDeliveries{}
		}
		d.venues[v] = vd
	}
	return vd
}

// begin stamps msgs with their ResumeFrom and records their Append as in flight. Call it just
// before the Append, and stored after it, whatever its outcome.
func (d *deliveries) begin(msgs []*eventstore.Message) ticket {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.nextTicket++
	t := ticket{id: d.nextTicket}
	from := map[string]int64{}
	for _, m := range msgs {
		f, ok := from[m.Venue]
		if !ok {
			vd := d.venue(m.Venue)
			through := d.known
			if len(vd.pending) > 0 {
				through = min(through, vd.pending[0]-1)
			}
			if len(vd.appends) > 0 {
				through = min(through, vd.appends[0].known)
			}
			f = through + 1
			from[m.Venue] = f
			t.venues = append(t.venues, m.Venue)
		}
		m.ResumeFrom = f
	}
	for _, v := range t.venues {
		vd := d.venues[v]
		vd.appends = append(vd.appends, inFlight{t.id, d.known}) // the greatest id so far
	}
	return t
}

// stored ends t's Append: the messages it stored (Seq set) wait for their delivery.
func (d *deliveries) stored(t ticket, msgs []*eventstore.Message) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, v := range t.venues {
		vd := d.venues[v]
		if i, ok := slices.BinarySearchFunc(vd.appends, t.id, func(f inFlight, id uint64) int { return cmp.Compare(f.id, id) }); ok {
			vd.appends = slices.Delete(vd.appends, i, i+1)
		}
	}
	for _, m := range msgs {
		if m.Seq == 0 {
			continue
		}
		d.known = max(d.known, m.Seq)
		vd := d.venue(m.Venue)
		i, _ := slices.BinarySearch(vd.pending, m.Seq)
		vd.pending = slices.Insert(vd.pending, i, m.Seq)
	}
	for _, v := range t.venues {
		d.drop(v)
	}
}

// delivered records that msgs (those stored) reached the readers.
func (d *deliveries) delivered(msgs []*eventstore.Message) {
	out := make([]stamped, 0, len(msgs))
	for _, m := range msgs {
		if m.Seq != 0 {
			out = append(out, stamped{m.Venue, m.Seq})
		}
	}
	d.deliveredStamps(out)
}

func (d *deliveries) deliveredStamps(ss []stamped) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range ss {
		vd := d.venues[s.venue]
		if vd == nil {
			continue
		}
		if i, ok := slices.BinarySearch(vd.pending, s.seq); ok {
			vd.pending = slices.Delete(vd.pending, i, i+1)
		}
		d.drop(s.venue)
	}
}

// drop forgets a venue with nothing in flight. d.mu is held.
func (d *deliveries) drop(v string) {
	if vd := d.venues[v]; vd != nil && len(vd.pending) == 0 && len(vd.appends) == 0 {
		delete(d.venues, v)
	}
}

// deliveredWhenHandled records msgs (published on the Stored stream) as delivered once the
// stream's subscribers have handled them: one goroutine waits for every batch handed to it
// meanwhile, and exists only while there are some.
func (d *deliveries) deliveredWhenHandled(msgs []*eventstore.Message) {
	if d.sync == nil {
		d.delivered(msgs)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range msgs {
		if m.Seq != 0 {
			d.handed = append(d.handed, stamped{m.Venue, m.Seq})
		}
	}
	if d.watching == nil && len(d.handed) > 0 {
		d.watching = make(chan struct{})
		go d.watch(d.watching)
	}
}

// handledWait bounds one wait for the Stored stream's subscribers; past it the messages count as
// delivered (a reader resuming after a later one would otherwise be sent ever more copies).
const handledWait = time.Minute

func (d *deliveries) watch(done chan struct{}) {
	defer close(done)
	for {
		d.mu.Lock()
		batch := d.handed
		d.handed = nil
		if len(batch) == 0 {
			d.watching = nil
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), handledWait)
		_ = d.sync(ctx) // every item of batch was published before this call
		cancel()
		d.deliveredStamps(batch)
	}
}
