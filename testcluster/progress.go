package testcluster

import "time"

// Progress is a snapshot of a running workload.
type Progress struct {
	Elapsed                               time.Duration // since the clients started
	Phase                                 string        // "starting", "traffic", "settling" or "draining"
	TopicWrites, TopicReads, TopicUnknown int64
	// Nick, mode and pin operations together.
	ObjectWrites, ObjectReads, ObjectUnknown int64
	MessagesSent, MessagesAcked, Deliveries  int64
	NodesUp                                  int
	Leader                                   string // "" when none is known
	Rounds                                   int    // nemesis rounds begun
}

// reportProgress calls opts.Progress every ProgressEvery until the returned stop is called.
func (r *runner) reportProgress() (stop func()) {
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(r.opts.ProgressEvery)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			r.opts.Progress(r.snapshot())
		}
	}()
	return func() {
		close(quit)
		<-finished
	}
}

func (r *runner) snapshot() Progress {
	r.mu.Lock()
	p := Progress{Elapsed: r.rec.now(), Phase: r.phase, Rounds: r.rounds}
	r.mu.Unlock()
	p.TopicWrites, p.TopicReads, p.TopicUnknown = r.rec.topicWrites.Load(), r.rec.topicReads.Load(), r.rec.topicUnknown.Load()
	p.ObjectWrites, p.ObjectReads, p.ObjectUnknown = r.rec.objectWrites.Load(), r.rec.objectReads.Load(), r.rec.objectUnknown.Load()
	p.MessagesSent, p.MessagesAcked, p.Deliveries = r.rec.msgsSent.Load(), r.rec.msgsAcked.Load(), r.rec.receipts.Load()
	for i := range r.c.N() {
		if r.c.Up(i) {
			p.NodesUp++
		}
	}
	if l := r.c.Leader(); l >= 0 {
		p.Leader = r.c.addrs[l].Name
	}
	return p
}
