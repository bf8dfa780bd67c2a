package assist

import (
	"sync"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc"
	"github.com/palaver-chat/palaver/node/stream"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Bounds of the disconnect record.
const (
	// MaxDisconnectsPerDID is how many recent disconnects are kept per DID.
	MaxDisconnectsPerDID = 16
	// MaxDisconnectDIDs is how many DIDs are kept; the one whose last disconnect is oldest goes
	// first.
	MaxDisconnectDIDs = 4096
)

// Disconnect is one ended session of an authenticated user.
type Disconnect struct {
	Session string
	Nick    string
	DID     string
	Node    string // the node that held the connection
	// Transport (tcp, tls, websocket) and ConnectedAt are known only on the node that held the
	// connection ("" and zero elsewhere).
	Transport   string
	Kind        string // irc.DisconnectKind
	Reason      string
	ConnectedAt time.Time
	At          time.Time
}

// Disconnects is this node's in-memory record of the recent session ends of authenticated users,
// bounded per DID and in DIDs. Two sources fill it: the applied Raft entries (every node applies
// every session's end, with the reason its node proposed, so every node records the same ends) and
// the IRC edge of this node (irc.DisconnectRecorder: the transport and connection time of the
// connections it held). Guests are not recorded: the tools ask by DID. A restart empties it; the
// ends of the sessions a restarted node held ("Server restarted") are recorded by the other nodes.
type Disconnects struct {
	mu    sync.Mutex
	byDID map[string][]Disconnect // oldest first
	order []string                // DIDs, least recently recorded first
}

// NewDisconnects makes an empty record.
func NewDisconnects() *Disconnects {
	return &Disconnects{byDID: map[string][]Disconnect{}}
}

// RecordDisconnect files what the IRC edge saw of a connection's end.
func (r *Disconnects) RecordDisconnect(d irc.Disconnect) {
	r.file(Disconnect{Session: d.Session, Nick: d.Nick, DID: d.DID, Transport: d.Transport, Kind: d.Kind,
		Reason: d.Reason, ConnectedAt: d.ConnectedAt, At: d.At})
}

// observe files the session ends of an applied entry.
func (r *Disconnects) observe(e stream.Entry) {
	for _, ev := range e.Events {
		if ev.Kind != fsm.EvQuit || ev.Actor.ID == "" {
			continue // remote members of linked channels have no session here
		}
		r.file(Disconnect{Session: ev.Actor.ID, Nick: ev.Actor.Nick, DID: ev.Actor.DID, Node: ev.Actor.Node,
			Kind: irc.DisconnectKind(ev.Text, false), Reason: ev.Text, At: time.UnixMilli(ev.Time)})
	}
}

// file adds a disconnect, or completes the one already filed for the same session.
func (r *Disconnects) file(d Disconnect) {
	if d.DID == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	list, known := r.byDID[d.DID]
	merged := false
	for i := range list {
		if list[i].Session == d.Session {
			list[i] = merge(list[i], d)
			merged = true
		}
	}
	if !merged {
		list = append(list, d)
		if len(list) > MaxDisconnectsPerDID {
			list = append(list[:0:0], list[len(list)-MaxDisconnectsPerDID:]...)
		}
	}
	r.byDID[d.DID] = list
	if known {
		for i, did := range r.order {
			if did == d.DID {
				r.order = append(r.order[:i], r.order[i+1:]...)
				break
			}
		}
	}
	r.order = append(r.order, d.DID)
	for len(r.order) > MaxDisconnectDIDs {
		delete(r.byDID, r.order[0])
		r.order = r.order[1:]
	}
}

// merge completes a filed disconnect with the other account of the same session's end: the
// edge's (it has a transport) gives the transport and connection time, the replicated one the
// node, the proposer's time and the reason, so that every node reports the same; the edge's
// reason wins only for a server shutdown, which the log may not carry.
func merge(old, d Disconnect) Disconnect {
	edge, replicated := old, d
	if d.Transport != "" {
		edge, replicated = d, old
	}
	out := replicated
	out.Transport, out.ConnectedAt = edge.Transport, edge.ConnectedAt
	if edge.Kind == irc.DisconnectRestart {
		out.Kind, out.Reason = edge.Kind, edge.Reason
	}
	return out
}

// For returns did's recorded disconnects, newest first.
func (r *Disconnects) For(did string) []Disconnect {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	list := r.byDID[did]
	out := make([]Disconnect, len(list))
	for i, d := range list {
		out[len(list)-1-i] = d
	}
	return out
}
