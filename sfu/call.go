package sfu

import (
	"sort"
	"sync"
	"time"
)

// call is one channel's call on this unit.
type call struct {
	sfu     *SFU
	channel string
	id      string
	started time.Time

	mu           sync.Mutex
	participants map[string]*Participant // by participant id
	tracks       map[string]*forwardTrack
	ended        bool
}

func newCall(s *SFU, channel, id string) *call {
	return &call{sfu: s, channel: channel, id: id, started: time.Now(),
		participants: map[string]*Participant{}, tracks: map[string]*forwardTrack{}}
}

// join builds the participant's peer connection, subscribes it to every published track and
// sends its first offer.
func (c *call) join(id, account string, out func(Signal) error) (*Participant, error) {
	p, err := newParticipant(c, id, account, out)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	switch {
	case c.ended:
		c.mu.Unlock()
		p.close("call ended", false)
		return nil, ErrClosed
	case len(c.participants) >= c.sfu.cfg.MaxParticipants:
		c.mu.Unlock()
		p.close("call full", false)
		return nil, ErrCallFull
	}
	c.participants[id] = p
	existing := make([]*forwardTrack, 0, len(c.tracks))
	for _, ft := range c.tracks {
		existing = append(existing, ft)
	}
	c.mu.Unlock()
	sort.Slice(existing, func(i, j int) bool { return existing[i].id < existing[j].id })
	for _, ft := range existing {
		p.subscribe(ft)
	}
	p.negotiate()
	p.start()
	return p, nil
}

// publish adds a track and subscribes every other participant to it.
func (c *call) publish(ft *forwardTrack) bool {
	c.mu.Lock()
	if c.ended || c.participants[ft.pub.id] != ft.pub {
		c.mu.Unlock()
		return false
	}
	c.tracks[ft.id] = ft
	subs := c.othersLocked(ft.pub)
	c.mu.Unlock()
	for _, p := range subs {
		p.subscribe(ft)
		p.requestNegotiation()
	}
	return true
}

// unpublish removes a track from every subscriber.
func (c *call) unpublish(ft *forwardTrack) {
	c.mu.Lock()
	if c.tracks[ft.id] != ft {
		c.mu.Unlock()
		return
	}
	delete(c.tracks, ft.id)
	subs := c.othersLocked(ft.pub)
	c.mu.Unlock()
	ft.stop()
	for _, p := range subs {
		if p.unsubscribe(ft) {
			p.requestNegotiation()
		}
	}
}

// remove takes a participant out of the call and unpublishes its tracks.
func (c *call) remove(p *Participant) {
	c.mu.Lock()
	if c.participants[p.id] != p {
		c.mu.Unlock()
		return
	}
	delete(c.participants, p.id)
	var own []*forwardTrack
	for _, ft := range c.tracks {
		if ft.pub == p {
			own = append(own, ft)
		}
	}
	c.mu.Unlock()
	for _, ft := range own {
		c.unpublish(ft)
	}
	c.sfu.dropIfEmpty(c)
}

// end disconnects every participant.
func (c *call) end(reason string) {
	c.mu.Lock()
	c.ended = true
	ps := make([]*Participant, 0, len(c.participants))
	for _, p := range c.participants {
		ps = append(ps, p)
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.close(reason, false)
		}()
	}
	wg.Wait()
}

func (c *call) othersLocked(p *Participant) []*Participant {
	out := make([]*Participant, 0, len(c.participants))
	for _, o := range c.participants {
		if o != p {
			out = append(out, o)
		}
	}
	return out
}

func (c *call) byAccount(account string) []*Participant {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Participant
	for _, p := range c.participants {
		if p.account == account {
			out = append(out, p)
		}
	}
	return out
}

func (c *call) empty() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.participants) == 0
}

func (c *call) size() (participants, tracks int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.participants), len(c.tracks)
}
