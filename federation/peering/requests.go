package peering

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// A topic change asked for on the non-home side of a link is not applied there: RequestTopic
// sends it to the home and waits until the home acknowledged the envelope. The home applies it
// if the actor may set it in the home's own state and sends the result back as the channel's
// topic, which is when the requesting side applies it (and its IRC clients see it).
//
// The home's answer names one of this server's users, which a home may not normally do. It is
// accepted on that ground only when it carries a request this server made: the request id is a
// ULID (so it dates itself) and the requesting node signs (this server, channel, set-by, DID,
// text, request id) with its server key. Any node of the cluster checks that signature against
// the cluster's server keys in the replicated key registry, so the answer may arrive at any node;
// each node accepts a request id once, and only within requestTTL of its making.

// ErrLinkDown is a request that could not be delivered to the channel's home server.
var ErrLinkDown = errors.New("the link to the channel's home server is down")

// ErrRefusedByHome is a request the home server (or, for a kick or invite, the target's server)
// refused; the error text says why.
var ErrRefusedByHome = errors.New("the channel's home server refused the change")

// RefusedError is a request the peer refused, with its reason (an outcome such as "not-op"). It
// matches ErrRefusedByHome.
type RefusedError struct{ Why string }

func (e *RefusedError) Error() string        { return ErrRefusedByHome.Error() + ": " + e.Why }
func (e *RefusedError) Is(target error) bool { return target == ErrRefusedByHome }

// requestTTL is how long the home's answer to a request is accepted.
const requestTTL = 10 * time.Minute

// queuedItem is a state change waiting in an outbox (a topic or another change); done
// (requests only) hears the outcome.
type queuedItem struct {
	topic  *Topic
	change *Change
	done   chan error
}

func (q *queuedItem) requestID() string {
	if q.topic != nil {
		return q.topic.RequestID
	}
	return q.change.RequestID
}

// HomeElsewhere reports whether channel (folded) is linked with a peer that is its home and is
// trusted with channel state: its state changes are then requested from that home, never made
// here first.
func (f *Federation) HomeElsewhere(channel string) bool {
	peerDID := f.PeerOf(channel)
	return peerDID != "" && !f.IsHome(peerDID) && f.peers[peerDID].Trust.MayChangeState()
}

// RequestTopic asks the home of channel (folded; HomeElsewhere must hold) to set its topic, and
// waits until the home acknowledged the request. nil: the home accepted it, and the change
// arrives as the home's topic. ErrRefusedByHome: the home refused it. ErrLinkDown: it could not be
// delivered. On error nothing changed.
func (f *Federation) RequestTopic(ctx context.Context, channel, setBy, setByDID, text string) error {
	peerDID := f.PeerOf(channel)
	if !f.HomeElsewhere(channel) {
		return fmt.Errorf("peering: %s is not a channel whose home is a peer", channel)
	}
	o := f.outboxes[peerDID]
	if o == nil {
		return ErrLinkDown
	}
	t := Topic{Channel: channel, Text: text, SetBy: setBy, SetByDID: setByDID, AtMS: f.cfg.Now().UnixMilli(),
		RequestID: ulid.Make().String()}
	t.RequestSig = signing.Sign(f.cfg.Key, topicRequestDocument(f.cfg.ServerDID, t))
	return o.request(ctx, &queuedItem{topic: &t, done: make(chan error, 1)})
}

// RequestChange asks the home of c.Channel (HomeElsewhere must hold) to make a mode, pin or unpin
// change, as RequestTopic does for topics.
func (f *Federation) RequestChange(ctx context.Context, c Change) error {
	peerDID := f.PeerOf(c.Channel)
	if !f.HomeElsewhere(c.Channel) {
		return fmt.Errorf("peering: %s is not a channel whose home is a peer", c.Channel)
	}
	o := f.outboxes[peerDID]
	if o == nil {
		return ErrLinkDown
	}
	c.AtMS, c.Sync, c.RequestID = f.cfg.Now().UnixMilli(), false, ulid.Make().String()
	c.RequestSig = signing.Sign(f.cfg.Key, changeRequestDocument(f.cfg.ServerDID, c))
	return o.request(ctx, &queuedItem{change: &c, done: make(chan error, 1)})
}

// ActOnRemote sends a kick or invite of a user of the peer a channel is linked with to that peer,
// whichever side is the home, and waits until the peer acknowledged it: nil means the peer
// accepted it (the change shows as that user's presence), ErrRefusedByHome that it refused.
func (f *Federation) ActOnRemote(ctx context.Context, c Change) error {
	if c.Kind != ChangeKick && c.Kind != ChangeInvite {
		return fmt.Errorf("peering: %s is not a kick or invite", c.Kind)
	}
	peerDID := f.PeerOf(c.Channel)
	o := f.outboxes[peerDID]
	if o == nil || !f.peers[peerDID].Trust.MayChangeState() {
		return fmt.Errorf("peering: %s is not linked with a peer trusted with channel state", c.Channel)
	}
	c.AtMS, c.Sync, c.RequestID = f.cfg.Now().UnixMilli(), false, ulid.Make().String()
	c.RequestSig = signing.Sign(f.cfg.Key, changeRequestDocument(f.cfg.ServerDID, c))
	return o.request(ctx, &queuedItem{change: &c, done: make(chan error, 1)})
}

// request queues a request and waits for its outcome. A link known to be down refuses it at
// once; one whose state is not known yet (no attempt finished since the node started) takes it,
// and the attempt's outcome is the request's.
func (o *outbox) request(ctx context.Context, q *queuedItem) error {
	if err := o.queueRequest(q); err != nil {
		return err
	}
	select {
	case err := <-q.done:
		return err
	case <-ctx.Done():
		o.unqueue(q)
		return fmt.Errorf("%w: %w", ErrLinkDown, ctx.Err())
	}
}

// topicRequestDocument is what a topic request's signature covers.
func topicRequestDocument(serverDID string, t Topic) []byte {
	return []byte(strings.Join([]string{"palaver-topic-request/1", serverDID, t.Channel, t.SetBy, t.SetByDID, t.Text, t.RequestID}, "\x00"))
}

// changeRequestDocument is what a change request's signature covers.
func changeRequestDocument(serverDID string, c Change) []byte {
	parts := []string{"palaver-change-request/1", serverDID, c.Kind, c.Channel, c.Actor, c.ActorDID, c.MsgID,
		c.Target, c.TargetDID, c.Reason, c.RequestID}
	for _, m := range c.Modes {
		sign := "-"
		if m.Add {
			sign = "+"
		}
		parts = append(parts, sign+m.Mode, m.Arg)
	}
	return []byte(strings.Join(parts, "\x00"))
}

// ownTopicRequest reports whether t answers a topic request this server made (ownRequest).
func (f *Federation) ownTopicRequest(t Topic) bool {
	return f.ownRequest(t.RequestID, t.RequestSig, topicRequestDocument(f.cfg.ServerDID, t))
}

// ownChangeRequest reports whether c answers a change request this server made (ownRequest).
func (f *Federation) ownChangeRequest(c Change) bool {
	return f.ownRequest(c.RequestID, c.RequestSig, changeRequestDocument(f.cfg.ServerDID, c))
}

// ownRequest reports whether a home's answer carries a request this server made and this node has
// not seen answered before: a fresh request id and a valid signature over doc by one of this
// cluster's server keys.
func (f *Federation) ownRequest(requestID, requestSig string, doc []byte) bool {
	id, err := ulid.ParseStrict(requestID)
	if err != nil || requestSig == "" {
		return false
	}
	now := f.cfg.Now()
	made := ulid.Time(id.Time())
	if now.Sub(made) > requestTTL || made.Sub(now) > maxClockSkew {
		return false
	}
	tag, err := signing.ParseSigTag(requestSig)
	if err != nil {
		return false
	}
	var pub ed25519.PublicKey
	f.cfg.State.Read(func(st *fsm.State) {
		if k, ok := st.Key(f.cfg.ServerDID, tag.KID); ok && k.Source() == "server-key" && k.RemovedAt() == 0 {
			pub = k.PublicKey()
		}
	})
	if pub == nil || !ed25519.Verify(pub, doc, tag.Signature) {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for rid, at := range f.answered {
		if now.Sub(at) > requestTTL {
			delete(f.answered, rid)
		}
	}
	if _, seen := f.answered[requestID]; seen {
		return false
	}
	f.answered[requestID] = now
	return true
}

// queueRequest queues a request unless the link is down or too much is waiting. The link's state
// is read under the same lock that failRequests takes, so a request is either failed with the
// send that found the link down or refused here: it never waits in the queue of a link that is
// down, to be applied late.
func (o *outbox) queueRequest(q *queuedItem) error {
	o.mu.Lock()
	var err error
	switch {
	case o.link == linkDown:
		err = ErrLinkDown
	case len(o.queued) >= maxQueued:
		err = fmt.Errorf("%w: too many changes waiting", ErrLinkDown)
	default:
		o.queued = append(o.queued, q)
	}
	o.mu.Unlock()
	if err == nil {
		o.kick()
	}
	return err
}

// queue queues a state change that is not a request (the home's own changes and answers); it is
// dropped when too much is waiting (the home's snapshot at the next link up carries the state).
func (o *outbox) queue(q *queuedItem) {
	o.mu.Lock()
	full := len(o.queued) >= maxQueued
	if !full {
		o.queued = append(o.queued, q)
	}
	o.mu.Unlock()
	if !full {
		o.kick()
	}
}

// unqueue drops a change that was not sent yet.
func (o *outbox) unqueue(q *queuedItem) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, v := range o.queued {
		if v == q {
			o.queued = append(o.queued[:i:i], o.queued[i+1:]...)
			return
		}
	}
}

// sent removes the changes an accepted envelope carried and tells each request its outcome.
func (o *outbox) sent(qs []*queuedItem, ack Ack) {
	o.mu.Lock()
	gone := make(map[*queuedItem]bool, len(qs))
	for _, q := range qs {
		gone[q] = true
	}
	kept := o.queued[:0]
	for _, v := range o.queued {
		if !gone[v] {
			kept = append(kept, v)
		}
	}
	clear(o.queued[len(kept):])
	o.queued = kept
	o.mu.Unlock()
	for _, q := range qs {
		if q.done == nil {
			continue
		}
		if why := ack.Refused[q.requestID()]; why != "" {
			q.done <- &RefusedError{Why: sanitize(why, 40)}
		} else {
			q.done <- nil
		}
	}
}

// failRequests drops the waiting requests after a failed send: their askers hear the link is
// down and nothing changes (a request is never applied late).
func (o *outbox) failRequests(err error) {
	o.mu.Lock()
	var failed []*queuedItem
	kept := o.queued[:0]
	for _, v := range o.queued {
		if v.done != nil {
			failed = append(failed, v)
		} else {
			kept = append(kept, v)
		}
	}
	clear(o.queued[len(kept):])
	o.queued = kept
	o.mu.Unlock()
	for _, q := range failed {
		q.done <- fmt.Errorf("%w: %w", ErrLinkDown, err)
	}
}
