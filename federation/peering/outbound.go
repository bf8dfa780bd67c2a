package peering

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/palaver-chat/palaver/federation/eventstore"
	"github.com/palaver-chat/palaver/federation/exchange"
)

// outbox sends this node's events of the channels linked with one peer, from durable cursors.
type outbox struct {
	f     *Federation
	peer  Peer
	kickc chan struct{}

	mu     sync.Mutex
	seq    int64         // last envelope seq sent
	queued []*queuedItem // state changes waiting to be sent (not durable: the home resends on link up)
	synced bool          // the home's topics were sent since the link came up
	link   linkState     // what the last attempt to reach the peer found
	// presence of this node's sessions waiting to be sent (in memory; see presence.go)
	presence []Presence
	// askPresence: the next envelope asks the peer for its members (this node forgot them, or
	// just started); forgot: the peer's members were forgotten since the link last worked.
	askPresence, forgot bool
	lastSent            time.Time // the last envelope the peer accepted
}

// linkState is what an outbox knows of its peer. Until its first attempt since the node started
// has finished it knows nothing: a request made then waits for that attempt's outcome instead of
// being refused as if the link were down (a session can ask for a change before the first
// envelope of a node that just started has come back).
type linkState int

const (
	linkUnknown linkState = iota // no attempt finished yet
	linkUp                       // the last attempt succeeded
	linkDown                     // the last attempt failed
)

// keepaliveEvery is how often an idle outbox sends an empty envelope, so that a link that dropped
// is noticed (and its remote members forgotten) without waiting for traffic.
func (o *outbox) keepaliveEvery() time.Duration { return 10 * o.f.cfg.SendEvery }

// maxQueued bounds the state changes waiting for one peer.
const maxQueued = 1000

func newOutbox(f *Federation, p Peer) *outbox {
	return &outbox{f: f, peer: p, kickc: make(chan struct{}, 1), askPresence: true}
}

func (o *outbox) kick() {
	select {
	case o.kickc <- struct{}{}:
	default:
	}
}

// cursor is the peer's acknowledged position in one of this node's logs (exchange's scheme:
// out:<log>:<peer DID>; the former fed-out rows stay readable).
func (o *outbox) cursor(l exchange.Log) exchange.CursorKey {
	return exchange.CursorKey{Dir: exchange.Out, Log: l, Peer: o.peer.DID}
}

// run sends until ctx ends, retrying with a capped backoff while the peer is unreachable.
func (o *outbox) run(ctx context.Context) {
	every := o.f.cfg.SendEvery
	wait := time.Duration(0)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-o.kickc:
		}
		if err := o.flushGuarded(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			o.f.metrics.linkUp.WithLabelValues(o.peer.DID).Set(0)
			o.mu.Lock()
			o.synced, o.link = false, linkDown
			forget := !o.forgot
			o.forgot, o.askPresence = true, true
			o.mu.Unlock()
			o.failRequests(err)
			if forget {
				o.f.linkLost(ctx, o.peer.DID)
			}
			o.f.log.Debug("federation send failed; retrying", "peer", o.peer.DID, "err", err)
			wait = min(max(2*wait, every), 10*every)
		} else {
			o.f.metrics.linkUp.WithLabelValues(o.peer.DID).Set(1)
			o.mu.Lock()
			o.link, o.forgot = linkUp, false
			o.mu.Unlock()
			wait = every
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

// pending is one envelope's worth of work.
type pending struct {
	events         []Event
	deletions      []Deletion
	topics         []Topic
	changes        []Change
	queued         []*queuedItem // the queued state changes (after the home's snapshot)
	reactions      []Reaction
	presence       []Presence
	queuedPresence int   // how many of presence came from the queue (after the snapshot)
	wantPresence   bool  // ask the peer for its members
	keepalive      bool  // send even when there is nothing to send
	lastEvent      int64 // last row examined (sent or skipped)
	lastDeletion   int64
	lastReaction   int64 // last reaction log row examined (sent or skipped)
	eventCursor    int64
	deleteCursor   int64
	reactCursor    int64
	moreToExamine  bool
}

func (p pending) items() int {
	return len(p.events) + len(p.deletions) + len(p.topics) + len(p.reactions) + len(p.changes) + len(p.presence)
}

// flush sends envelopes until nothing is left or the peer stops accepting.
func (o *outbox) flush(ctx context.Context) error {
	for {
		p, err := o.collect(ctx)
		if err != nil {
			return err
		}
		if p.items() == 0 && !p.wantPresence && !p.keepalive {
			if err := o.advance(ctx, p, Ack{EventsThrough: p.lastEvent, DeletionsThrough: p.lastDeletion}); err != nil {
				return err
			}
			o.f.metrics.lag.WithLabelValues(o.peer.DID).Set(0)
			if !p.moreToExamine {
				return nil
			}
			continue
		}
		o.f.metrics.lag.WithLabelValues(o.peer.DID).Set(float64(len(p.events) + len(p.deletions)))
		ack, err := o.send(ctx, p)
		if err != nil {
			return err
		}
		o.f.metrics.count(o.peer.DID, "out", "sent", p.items())
		o.sent(p.queued, ack)
		o.mu.Lock()
		o.presence = o.presence[p.queuedPresence:]
		o.lastSent = o.f.cfg.Now()
		if p.wantPresence {
			o.askPresence = false
		}
		o.mu.Unlock()
		o.mu.Lock()
		o.synced = true
		o.mu.Unlock()
		// Rows skipped after the last one sent are covered when everything sent was taken.
		if n := len(p.events); n > 0 && ack.EventsThrough == p.events[n-1].Seq {
			ack.EventsThrough = p.lastEvent
		} else if n == 0 {
			ack.EventsThrough = p.lastEvent
		}
		if n := len(p.deletions); n > 0 && ack.DeletionsThrough == p.deletions[n-1].Seq {
			ack.DeletionsThrough = p.lastDeletion
		} else if n == 0 {
			ack.DeletionsThrough = p.lastDeletion
		}
		if err := o.advance(ctx, p, ack); err != nil {
			return err
		}
		if ack.EventsThrough < p.lastEvent || ack.DeletionsThrough < p.lastDeletion {
			return nil // the peer waits for something; try again on the next round
		}
		o.f.metrics.lag.WithLabelValues(o.peer.DID).Set(0)
		if !p.moreToExamine {
			return nil
		}
	}
}

func (o *outbox) advance(ctx context.Context, p pending, ack Ack) error {
	if ack.EventsThrough > p.eventCursor {
		if err := exchange.WriteCursor(ctx, o.f.cfg.Store, o.cursor(exchange.LogMessages), ack.EventsThrough); err != nil {
			return fmt.Errorf("outbox: %w", err)
		}
	}
	if ack.DeletionsThrough > p.deleteCursor {
		if err := exchange.WriteCursor(ctx, o.f.cfg.Store, o.cursor(exchange.LogDeletes), ack.DeletionsThrough); err != nil {
			return fmt.Errorf("outbox: %w", err)
		}
	}
	// Reactions are not acknowledged one by one: those sent were taken with the envelope.
	if p.lastReaction > p.reactCursor {
		if err := exchange.WriteCursor(ctx, o.f.cfg.Store, o.cursor(exchange.LogReactions), p.lastReaction); err != nil {
			return fmt.Errorf("outbox: %w", err)
		}
	}
	return nil
}

// Shares of one envelope: each snapshot (the home's topics, the home's modes, this cluster's
// members) and each queue (state changes, reactions, presence) takes at most its share, so that
// at least MaxBatchItems-6*12 = 28 items are left for messages and deletes. A snapshot longer than
// its share (more linked channels) is cut; the rest is sent on the next link up.
const (
	snapshotShare = MaxBatchItems / 8
	queueShare    = MaxBatchItems / 8
)

// collect reads what is due: this node's rows of linked channels after the cursors, newer than
// the catch-up window, that did not come from a peer; and queued topic changes.
func (o *outbox) collect(ctx context.Context) (pending, error) {
	var p pending
	st := o.f.cfg.Store
	var err error
	if p.eventCursor, err = exchange.ReadCursor(ctx, st, o.cursor(exchange.LogMessages)); err != nil {
		return p, err
	}
	if p.deleteCursor, err = exchange.ReadCursor(ctx, st, o.cursor(exchange.LogDeletes)); err != nil {
		return p, err
	}
	p.lastEvent, p.lastDeletion = p.eventCursor, p.deleteCursor
	oldest := o.f.cfg.Now().Add(-o.f.cfg.CatchUpWindow)
	o.mu.Lock()
	synced := o.synced
	o.mu.Unlock()
	if !synced && o.f.IsHome(o.peer.DID) {
		p.topics = o.f.homeTopics(o.peer.DID)
		p.topics = p.topics[:min(len(p.topics), snapshotShare)]
		p.changes = o.f.homeModes(o.peer.DID)
		p.changes = p.changes[:min(len(p.changes), snapshotShare)]
	}
	if !synced {
		p.presence = o.f.presenceSnapshot(o.peer.DID)
		p.presence = p.presence[:min(len(p.presence), snapshotShare)]
	}
	o.mu.Lock()
	p.queuedPresence = min(len(o.presence), queueShare)
	p.presence = append(p.presence, o.presence[:p.queuedPresence]...)
	p.wantPresence = o.askPresence
	p.keepalive = o.f.cfg.Now().Sub(o.lastSent) >= o.keepaliveEvery()
	p.queued = append(p.queued, o.queued[:min(len(o.queued), queueShare)]...)
	o.mu.Unlock()
	if err := o.collectReactions(ctx, &p, oldest); err != nil {
		return p, err
	}
	for _, q := range p.queued {
		if q.topic != nil {
			p.topics = append(p.topics, *q.topic)
		} else {
			p.changes = append(p.changes, *q.change)
		}
	}
	room := MaxBatchItems - len(p.topics) - len(p.reactions) - len(p.changes) - len(p.presence)
	rows, err := st.OriginAfter(ctx, o.f.cfg.NodeName, p.eventCursor, room)
	if err != nil {
		return p, fmt.Errorf("outbox rows: %w", err)
	}
	p.moreToExamine = p.moreToExamine || len(rows) == room
	for _, m := range rows {
		p.lastEvent = m.Seq
		if o.f.DueMessage(o.peer.DID, m) {
			p.events = append(p.events, eventOf(m))
		}
	}
	room -= len(p.events)
	if room <= 0 {
		p.moreToExamine = true
		return p, nil
	}
	dels, err := st.DeletionsAfter(ctx, o.f.cfg.NodeName, p.deleteCursor, room)
	if err != nil {
		return p, fmt.Errorf("outbox deletions: %w", err)
	}
	p.moreToExamine = p.moreToExamine || len(dels) == room
	for _, d := range dels {
		p.lastDeletion = d.Seq
		if o.f.DueDeletion(o.peer.DID, d) {
			p.deletions = append(p.deletions, deletionOf(d))
		}
	}
	return p, nil
}

func eventOf(m eventstore.Message) Event {
	return Event{Seq: m.Seq, MsgID: m.MsgID, Venue: m.Venue, Command: m.Command, Sender: m.Sender,
		SenderNick: m.SenderNick, SenderDID: m.SenderDID, Text: m.Text, Tags: m.Tags, TimeMS: m.Time.UnixMilli(),
		ReplacesMsgID: m.ReplacesMsgID}
}

func deletionOf(d eventstore.Deletion) Deletion {
	return deletionWithEventID(d.Seq, d.RootMsgID, d.At.UnixMilli(), d.Venue, d.Sender, d.SenderDID, d.Tags)
}

// deletionWithEventID is a delete as it crosses: the delete event's msgid, which a filed delete
// keeps among its tags, travels as EventID.
func deletionWithEventID(seq int64, root string, atMS int64, venue, sender, senderDID string, filed map[string]string) Deletion {
	tags := make(map[string]string, len(filed))
	for k, v := range filed {
		if k != deletionEventIDTag {
			tags[k] = v
		}
	}
	return Deletion{Seq: seq, EventID: filed[deletionEventIDTag], RootMsgID: root, AtMS: atMS,
		Venue: venue, Sender: sender, SenderDID: senderDID, Tags: tags}
}

// errRefused is a peer's refusal of an envelope.
var errRefused = errors.New("peer refused the envelope")

// send seals and posts one envelope; an out-of-order refusal moves the sequence past the peer's
// last accepted one and sends once more.
func (o *outbox) send(ctx context.Context, p pending) (Ack, error) {
	for attempt := 0; ; attempt++ {
		o.mu.Lock()
		o.seq = max(o.f.cfg.Now().UnixMicro(), o.seq+1)
		seq := o.seq
		o.mu.Unlock()
		b := Batch{From: o.f.cfg.ServerDID, To: o.peer.DID, Seq: seq, SentAt: o.f.cfg.Now().Unix(),
			Events: p.events, Deletions: p.deletions, Topics: p.topics, Reactions: p.reactions, Changes: p.changes,
			Presence: p.presence, WantPresence: p.wantPresence}
		body, err := Seal(o.f.cfg.Key, b)
		if err != nil {
			return Ack{}, err
		}
		ack, refusal, err := o.post(ctx, body)
		if err != nil {
			return Ack{}, err
		}
		if refusal == nil {
			return ack, nil
		}
		if refusal.Code == CodeOutOfOrder && attempt == 0 {
			o.mu.Lock()
			o.seq = max(o.seq, refusal.LastSeq)
			o.mu.Unlock()
			continue
		}
		msg := refusal.Message
		if msg == "" {
			msg = refusal.Error // a receiver that answers without the Error object
		}
		return Ack{}, fmt.Errorf("%w: %s: %s", errRefused, refusal.Code, msg)
	}
}

func (o *outbox) post(ctx context.Context, body []byte) (Ack, *Refusal, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.peer.BaseURL+"/federation/v1/events", bytes.NewReader(body))
	if err != nil {
		return Ack{}, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(EnvelopeHeader, SignEnvelopeHeader(o.f.cfg.Key, o.f.cfg.ServerDID, body))
	resp, err := o.f.cfg.Client.Do(req)
	if err != nil {
		return Ack{}, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return Ack{}, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var r Refusal
		if json.Unmarshal(data, &r) != nil || r.Code == "" {
			return Ack{}, nil, fmt.Errorf("peer answered %s", resp.Status)
		}
		return Ack{}, &r, nil
	}
	var ack Ack
	if err := json.Unmarshal(data, &ack); err != nil || !ack.OK {
		return Ack{}, nil, fmt.Errorf("peer answered 200 without an acknowledgement")
	}
	return ack, nil, nil
}
