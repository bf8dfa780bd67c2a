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
)

// outbox sends the authority plug-in's traffic to one peer as signed envelopes: the home's
// topics and modes (its snapshot when the link comes up, then its changes), requests to the home
// and the answers to them, and presence (a snapshot when the link comes up, then changes). What
// this node originates (messages, edits, deletes, reactions) is not here: it travels on the
// exchange's stream (plane.go). The outbox sends only when something is queued or the link comes
// up; it never polls.
type outbox struct {
	f     *Federation
	peer  Peer
	kickc chan struct{}

	mu     sync.Mutex
	seq    int64         // last envelope seq sent
	queued []*queuedItem // state changes waiting to be sent (not durable: the home resends on link up)
	synced bool          // the link-up snapshots were sent since the link came up
	link   linkState     // what the stream to the peer found (plane.go: StreamUp, StreamDown)
	// presence of this node's sessions waiting to be sent (in memory; see presence.go)
	presence []Presence
	// askPresence: the next envelope asks the peer for its members (this node forgot them, or
	// just started); forgot: the peer's members were forgotten since the link last worked.
	askPresence, forgot bool
	// epoch counts the link's changes (StreamUp, StreamDown): an envelope collected before one
	// does not mark the snapshots sent or the members asked for after it.
	epoch int
}

// linkState is what an outbox knows of its peer, from this node's stream to it. Until the stream
// was first opened or failed since the node started it knows nothing: a request made then waits
// for the outcome of the envelope that carries it instead of being refused as if the link were
// down (a session can ask for a change before the stream of a node that just started is up).
type linkState int

const (
	linkUnknown linkState = iota // the stream was neither opened nor failed yet
	linkUp                       // the stream is open
	linkDown                     // the stream failed or could not be opened
)

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

// run sends until ctx ends: when kicked (something was queued, or the link came up), and again
// with a capped backoff while envelopes fail.
func (o *outbox) run(ctx context.Context) {
	every := o.f.cfg.SendEvery
	wait := time.Duration(0)
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-retry.C:
		case <-o.kickc:
		}
		retry.Stop()
		err := o.flushGuarded(ctx)
		if err == nil {
			wait = 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		// The requests the failed envelope carried fail (they are never applied late); the
		// rest is sent again. The link's state is the stream's.
		o.failRequests(err)
		o.f.log.Debug("federation envelope failed; retrying", "peer", o.peer.DID, "err", err)
		wait = min(max(2*wait, every), 10*every)
		retry.Reset(wait)
	}
}

// pending is one envelope's worth of work.
type pending struct {
	topics         []Topic
	changes        []Change
	queued         []*queuedItem // the queued state changes (after the home's snapshot)
	presence       []Presence
	queuedPresence int  // how many of presence came from the queue (after the snapshot)
	wantPresence   bool // ask the peer for its members
	epoch          int  // the outbox's epoch when collected
}

func (p pending) items() int { return len(p.topics) + len(p.changes) + len(p.presence) }

// flush sends envelopes until nothing is left, the peer stops accepting or the stream goes down.
func (o *outbox) flush(ctx context.Context) error {
	for {
		p := o.collect()
		if p.items() == 0 && !p.wantPresence {
			return nil
		}
		ack, err := o.send(ctx, p)
		if err != nil {
			return err
		}
		o.f.metrics.count(o.peer.DID, "out", "sent", p.items())
		o.sent(p.queued, ack)
		o.mu.Lock()
		o.presence = o.presence[p.queuedPresence:]
		if o.epoch == p.epoch {
			o.askPresence = o.askPresence && !p.wantPresence
			o.synced = true
		}
		o.mu.Unlock()
	}
}

// Shares of one envelope: each snapshot (the home's topics, the home's modes, this cluster's
// members) and each queue (state changes, presence) takes at most its share, so that none
// starves the others. A snapshot longer than its share (more linked channels) is cut; the rest is
// sent on the next link up.
const (
	snapshotShare = MaxBatchItems / 8
	queueShare    = MaxBatchItems / 8
)

// collect reads what is due: nothing while the stream is down; else the link-up snapshots when
// they were not sent since the link came up, then the queued state changes and presence, each
// within its share.
func (o *outbox) collect() pending {
	var p pending
	o.mu.Lock()
	synced, down := o.synced, o.link == linkDown
	p.epoch = o.epoch
	o.mu.Unlock()
	if down {
		// Nothing goes out while the stream is down: the link-up snapshots and what was queued
		// meanwhile leave when it comes up (StreamUp kicks the outbox).
		return p
	}
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
	p.queued = append(p.queued, o.queued[:min(len(o.queued), queueShare)]...)
	o.mu.Unlock()
	for _, q := range p.queued {
		if q.topic != nil {
			p.topics = append(p.topics, *q.topic)
		} else {
			p.changes = append(p.changes, *q.change)
		}
	}
	return p
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
			Topics: p.topics, Changes: p.changes, Presence: p.presence, WantPresence: p.wantPresence}
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
