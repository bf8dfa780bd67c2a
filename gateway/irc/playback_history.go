package irc

import (
	"context"
	"errors"
	"time"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// A channel's history for a draft/event-playback client: its messages (with the TAGMSGs kept in
// history, eventstore.Playback) and its events in one
// order, by time, the events of a millisecond before its messages. A reference (timestamp= or
// msgid= of a message or of an event) is turned into a bound on each side, and each side is read
// with the limit; the merged page is then cut to the limit from the side the subcommand keeps.

// histItem is one line of a merged history page: a message or an event.
type histItem struct {
	msg *eventstore.Message
	ev  *eventstore.ChannelEvent
}

func (h histItem) ms() int64 {
	if h.ev != nil {
		return h.ev.Time.UnixMilli()
	}
	return h.msg.Time.UnixMilli()
}

// messageItems wraps messages alone.
func messageItems(msgs []eventstore.Message) []histItem {
	out := make([]histItem, len(msgs))
	for i := range msgs {
		out[i] = histItem{msg: &msgs[i]}
	}
	return out
}

// mergeHistory interleaves messages and events, each in order, by time; at equal milliseconds
// the event goes first.
func mergeHistory(msgs []eventstore.Message, evs []eventstore.ChannelEvent) []histItem {
	out := make([]histItem, 0, len(msgs)+len(evs))
	i, j := 0, 0
	for i < len(msgs) || j < len(evs) {
		if j < len(evs) && (i == len(msgs) || evs[j].Time.UnixMilli() <= msgs[i].Time.UnixMilli()) {
			out = append(out, histItem{ev: &evs[j]})
			j++
			continue
		}
		out = append(out, histItem{msg: &msgs[i]})
		i++
	}
	return out
}

func firstN(items []histItem, n int) []histItem { return items[:min(n, len(items))] }

func lastN(items []histItem, n int) []histItem { return items[len(items)-min(n, len(items)):] }

// playbackRef is a reference resolved into bounds on both sides (all exclusive).
type playbackRef struct {
	msgUpper, msgLower eventstore.Bound
	evUpper, evLower   eventstore.EventPos
	// pos orders references for BETWEEN: (millisecond, 0 timestamp / 1 event / 2 message, then
	// the event's msgid or the message's seq).
	ms    int64
	class int
	ev    string
	seq   int64
	// center is the referenced message or event itself (AROUND); arrival is set for a message
	// msgid (AFTER catches up in arrival order).
	center  *histItem
	arrival string
}

func (a playbackRef) less(b playbackRef) bool {
	switch {
	case a.ms != b.ms:
		return a.ms < b.ms
	case a.class != b.class:
		return a.class < b.class
	case a.ev != b.ev:
		return a.ev < b.ev
	}
	return a.seq < b.seq
}

// resolvePlaybackRef resolves a non-zero bound of venue. A msgid that names neither a message nor
// an event of venue answers eventstore.ErrNotFound.
func (c *client) resolvePlaybackRef(ctx context.Context, venue string, b eventstore.Bound) (playbackRef, error) {
	if b.MsgID == "" {
		t := b.Time.UnixMilli()
		return playbackRef{msgUpper: b, msgLower: b, evUpper: eventstore.EventsBefore(t), evLower: eventstore.EventsAfter(t), ms: t}, nil
	}
	if root, err := c.s.history.Root(ctx, b.MsgID); err == nil && root.Venue == venue {
		t := root.Time.UnixMilli()
		return playbackRef{msgUpper: b, msgLower: b, evUpper: eventstore.EventsAfter(t), evLower: eventstore.EventsAfter(t),
			ms: t, class: 2, seq: root.Seq, arrival: b.MsgID}, nil
	} else if err != nil && !errors.Is(err, eventstore.ErrNotFound) {
		return playbackRef{}, err
	}
	ev, err := c.s.playback.ChannelEventByID(ctx, venue, b.MsgID)
	if err != nil {
		return playbackRef{}, err
	}
	if since, _ := c.channelLogStart(venue); ev.Index < since {
		return playbackRef{}, eventstore.ErrNotFound // an event of an earlier channel of that name
	}
	t := ev.Time.UnixMilli()
	pos := eventstore.EventPos{Ms: t, MsgID: ev.MsgID}
	return playbackRef{msgUpper: eventstore.Bound{Time: ev.Time}, msgLower: eventstore.Bound{Time: ev.Time.Add(-time.Millisecond)},
		evUpper: pos, evLower: pos, ms: t, class: 1, ev: ev.MsgID, center: &histItem{ev: &ev}}, nil
}

// channelLogStart is the first log index of the channel's current incarnation.
func (c *client) channelLogStart(venue string) (since uint64, ok bool) {
	c.s.state.Read(func(st *fsm.State) { since, ok = st.ChannelLogStart(venue) })
	return since, ok
}

// playbackHistory answers a CHATHISTORY subcommand over a channel's messages and events.
func (c *client) playbackHistory(ctx context.Context, sub, venue string, ref1, ref2 eventstore.Bound, limit int) ([]histItem, error) {
	since, ok := c.channelLogStart(venue)
	if !ok {
		return nil, nil
	}
	h, p := c.s.events, c.s.playback
	first, last := eventstore.EventsFirst, eventstore.EventsLast
	side := func(msgs []eventstore.Message, err error, evs []eventstore.ChannelEvent, err2 error) ([]histItem, error) {
		if err = errors.Join(err, err2); err != nil {
			return nil, err
		}
		withReactions(ctx, h, msgs)
		return mergeHistory(msgs, evs), nil
	}
	if sub == "LATEST" && ref1.IsZero() {
		msgs, err := h.Latest(ctx, venue, eventstore.Bound{}, limit)
		evs, err2 := p.NewestEvents(ctx, venue, first, last, since, limit)
		items, err := side(msgs, err, evs, err2)
		return lastN(items, limit), err
	}
	r1, err := c.resolvePlaybackRef(ctx, venue, ref1)
	if err != nil {
		return nil, err
	}
	switch sub {
	case "BEFORE":
		msgs, err := h.Before(ctx, venue, r1.msgUpper, limit)
		evs, err2 := p.NewestEvents(ctx, venue, first, r1.evUpper, since, limit)
		items, err := side(msgs, err, evs, err2)
		return lastN(items, limit), err
	case "LATEST":
		msgs, err := h.Latest(ctx, venue, r1.msgLower, limit)
		evs, err2 := p.NewestEvents(ctx, venue, r1.evLower, last, since, limit)
		items, err := side(msgs, err, evs, err2)
		return lastN(items, limit), err
	case "AFTER":
		var msgs []eventstore.Message
		if r1.arrival != "" {
			msgs, err = afterArrival(ctx, h, venue, r1.arrival, limit)
		} else {
			msgs, err = h.After(ctx, venue, r1.msgLower, limit)
		}
		evs, err2 := p.OldestEvents(ctx, venue, r1.evLower, last, since, limit)
		items, err := side(msgs, err, evs, err2)
		return firstN(items, limit), err
	case "BETWEEN":
		r2, err := c.resolvePlaybackRef(ctx, venue, ref2)
		if err != nil {
			return nil, err
		}
		if r1.less(r2) {
			msgs, err := h.Between(ctx, venue, r1.msgLower, r2.msgUpper, limit)
			evs, err2 := p.OldestEvents(ctx, venue, r1.evLower, r2.evUpper, since, limit)
			items, err := side(msgs, err, evs, err2)
			return firstN(items, limit), err
		}
		msgs, err := h.Between(ctx, venue, r1.msgUpper, r2.msgLower, limit)
		evs, err2 := p.NewestEvents(ctx, venue, r2.evLower, r1.evUpper, since, limit)
		items, err := side(msgs, err, evs, err2)
		return lastN(items, limit), err
	case "AROUND":
		return c.playbackAround(ctx, venue, ref1, r1, since, limit)
	}
	return nil, nil
}

// playbackAround answers AROUND: about half the page before the center and half after it, the
// center itself included when it is a msgid; a timestamp center counts its millisecond as after.
func (c *client) playbackAround(ctx context.Context, venue string, center eventstore.Bound, r playbackRef, since uint64, limit int) ([]histItem, error) {
	h, p := c.s.events, c.s.playback
	var middle []histItem
	if center.MsgID != "" && r.class == 2 {
		msgs, err := h.Around(ctx, venue, center, 1) // the center message, if it is visible
		if err != nil {
			return nil, err
		}
		withReactions(ctx, h, msgs)
		middle = messageItems(msgs)
	} else if r.center != nil {
		middle = []histItem{*r.center}
	}
	msgLower, evLower := r.msgLower, r.evLower
	if center.MsgID == "" {
		before := center.Time.Add(-time.Millisecond)
		msgLower, evLower = eventstore.Bound{Time: before}, eventstore.EventsAfter(before.UnixMilli())
	}
	rest := max(limit-len(middle), 0)
	n := max(rest, 1)
	bm, err := h.Before(ctx, venue, r.msgUpper, n)
	if err != nil {
		return nil, err
	}
	be, err := p.NewestEvents(ctx, venue, eventstore.EventsFirst, r.evUpper, since, n)
	if err != nil {
		return nil, err
	}
	am, err := h.After(ctx, venue, msgLower, n)
	if err != nil {
		return nil, err
	}
	ae, err := p.OldestEvents(ctx, venue, evLower, eventstore.EventsLast, since, n)
	if err != nil {
		return nil, err
	}
	withReactions(ctx, h, bm)
	withReactions(ctx, h, am)
	before, after := lastN(mergeHistory(bm, be), n), firstN(mergeHistory(am, ae), n)
	nBefore := min(rest/2, len(before))
	nAfter := min(rest-nBefore, len(after))
	nBefore = min(rest-nAfter, len(before))
	out := make([]histItem, 0, nBefore+len(middle)+nAfter)
	out = append(out, before[len(before)-nBefore:]...)
	out = append(out, middle...)
	return append(out, after[:nAfter]...), nil
}
