package peering

import (
	"context"
	"fmt"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// IsHome reports whether this server is the home of the channels linked with peer.
func (f *Federation) IsHome(peerDID string) bool {
	return Home(f.cfg.ServerDID, peerDID) == f.cfg.ServerDID
}

// Observe watches the replicated state's events for topic changes of linked channels made by
// sessions on this node, and queues them for the peer when this server is the channel's home. (On
// the other side a session's change is never applied locally: the IRC edge sends it to the home
// with RequestTopic.)
func (f *Federation) Observe(events []fsm.Event) {
	for i := range events {
		e := &events[i]
		f.observePresence(e)
		if e.Actor.ID == "" || e.Actor.Node != f.cfg.NodeName {
			continue
		}
		if e.Kind != fsm.EvTopic {
			f.observeChange(e)
			continue
		}
		peer := f.PeerOf(e.Channel)
		o := f.outboxes[peer]
		if o == nil || !f.IsHome(peer) || !f.peers[peer].Trust.MayChangeState() {
			continue
		}
		o.queueTopic(Topic{Channel: e.Channel, Text: e.Text, SetBy: e.Actor.Hostmask(), SetByDID: e.Actor.DID, AtMS: e.Time})
	}
}

func (o *outbox) queueTopic(t Topic) { o.queue(&queuedItem{topic: &t}) }

func (o *outbox) queueChange(c Change) { o.queue(&queuedItem{change: &c}) }

// homeTopics is the home's current topics of the channels linked with peer, sent when a link
// comes up so the other side converges on the home's state.
func (f *Federation) homeTopics(peerDID string) []Topic {
	var out []Topic
	f.cfg.State.Read(func(st *fsm.State) {
		for name := range f.links[peerDID] {
			if ch, ok := st.Channel(name); ok && ch.Topic() != "" {
				out = append(out, Topic{Channel: name, Text: ch.Topic(), SetBy: ch.TopicBy(), AtMS: ch.TopicAt()})
			}
		}
	})
	return out
}

// applyTopic applies a topic from a peer. From the home it is the channel's topic; to the home it
// is a request, applied when the actor may set it here and then sent back as the home's topic.
// Either way the actor is checked against local state: on a topic-locked channel only a DID that
// is an operator here may change it. A request may never name one of this server's users; the
// home's topic may name one only when it answers a request this server made (ownRequest).
func (f *Federation) applyTopic(ctx context.Context, peer Peer, t Topic) (outcome, error) {
	if !f.Linked(peer.DID, t.Channel) {
		return outcomeNotLinked, nil
	}
	if t.SetByDID != "" && !validDID(t.SetByDID) {
		return outcomeMalformed, nil
	}
	if t.RequestID != "" && (!validMsgID(t.RequestID) || len(t.RequestSig) > maxNameBytes) {
		return outcomeMalformed, nil
	}
	text := sanitize(t.Text, fsm.MaxTopicLen)
	setBy := sanitizeName(t.SetBy)
	if setBy == "" {
		setBy = originName(peer.DID)
	}
	fromHome := !f.IsHome(peer.DID)
	var exists, locked bool
	f.cfg.State.Read(func(st *fsm.State) {
		if ch, ok := st.Channel(t.Channel); ok {
			exists, locked = true, ch.TopicLock()
		}
	})
	if !exists {
		return outcomeNotLinked, nil
	}
	own := f.ownedLocally(t.SetByDID, "")
	switch {
	case !fromHome && own:
		return outcomeImpostor, nil // a request may not claim one of our users
	case fromHome && own:
		// The home answering a change one of our users asked for (the asker's side checked it).
		if text != t.Text || setBy != t.SetBy || !f.ownTopicRequest(t) {
			return outcomeImpostor, nil
		}
	case locked && !f.isDIDOp(t.Channel, t.SetByDID):
		return outcomeNotOp, nil
	}
	res, err := f.cfg.Proposer.Propose(ctx, fsm.FederatedTopic{Channel: t.Channel, Text: text, SetBy: setBy, SetByDID: t.SetByDID})
	if err != nil {
		return "", fmt.Errorf("federated topic: %w", err)
	}
	if res.Code != fsm.OK && res.Code != fsm.NoChange {
		return outcomeMalformed, nil
	}
	if !fromHome {
		if o := f.outboxes[peer.DID]; o != nil {
			o.queueTopic(Topic{Channel: t.Channel, Text: text, SetBy: setBy, SetByDID: t.SetByDID, AtMS: f.cfg.Now().UnixMilli(),
				RequestID: t.RequestID, RequestSig: t.RequestSig})
		}
	}
	return outcomeStored, nil
}
