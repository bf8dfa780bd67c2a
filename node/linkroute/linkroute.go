package linkroute

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/palaver-chat/palaver/federation/peering"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Router is what an edge asks of linked-channel routing. Channel names are folded (fsm.Fold).
// A method that reports routed false left the change to the caller, which proposes it through
// Raft as for any channel; routed true means the change went to a peer server, with err its
// outcome (nil: accepted, the change arrives from the peer).
type Router interface {
	// Linked reports whether channel is linked with a peer server (such a channel cannot be
	// renamed, and its DID ops name users of either side).
	Linked(channel string) bool
	// HomeElsewhere reports whether channel's state is decided by the peer server it is linked
	// with: its topic, crossing modes and pins are requested from that home.
	HomeElsewhere(channel string) bool
	// Topic sends a topic change of a channel whose home is a peer to that home.
	Topic(ctx context.Context, a Actor, channel, text string) (routed bool, err error)
	// Modes sends the modes of a MODE that cross a link (flags i, t, n, m, bans, invite
	// exceptions) to the channel's home when the home is a peer, and returns the changes that stay
	// with this server (every change when the home is here).
	Modes(ctx context.Context, a Actor, channel string, changes []fsm.ModeChange) (local []fsm.ModeChange, err error)
	// Pin sends a pin (add) or unpin of msgid to the channel's home when the home is a peer.
	Pin(ctx context.Context, a Actor, channel, msgid string, add bool) (routed bool, err error)
	// Target sends a kick or invite of nick, a user of the peer server channel is linked with
	// (a kick: one present in channel), to that peer. It returns the user's nick as the peer
	// knows it; routed false when channel is not linked or nick is no such user.
	Target(ctx context.Context, a Actor, kind TargetKind, channel, nick, reason string) (user string, routed bool, err error)
}

// Actor is who makes a change: their session on this node, hostmask and DID ("" for a guest).
type Actor struct {
	Session string
	Mask    string
	DID     string
}

// TargetKind is a change that names a user of the peer.
type TargetKind uint8

const (
	Kick TargetKind = iota + 1
	Invite
)

// ErrNotOperator is a change the actor may not make in this server's state: nothing was sent.
var ErrNotOperator = errors.New("linkroute: not a channel operator here")

// ErrLinkDown is a request that could not be delivered to the peer: nothing changed.
var ErrLinkDown = errors.New("linkroute: the link to the peer server is down")

// RefusedError is a request the peer refused, with its reason (an outcome such as "not-op").
type RefusedError struct{ Why string }

func (e *RefusedError) Error() string {
	return "linkroute: the peer server refused the change: " + e.Why
}

// Peering is the part of federation/peering's Federation the service uses.
type Peering interface {
	IsLinked(channel string) bool
	HomeElsewhere(channel string) bool
	RequestTopic(ctx context.Context, channel, setBy, setByDID, text string) error
	RequestChange(ctx context.Context, change peering.Change) error
	ActOnRemote(ctx context.Context, change peering.Change) error
}

// State is the replicated state as the service reads it (fsm.Machine).
type State interface {
	Read(func(*fsm.State))
}

// RequestTimeout bounds how long a request waits for the peer's acknowledgement.
const RequestTimeout = 10 * time.Second

// Service is the Router over a node's federation and replicated state.
type Service struct {
	peers Peering // nil: no peer servers
	state State
}

var _ Router = (*Service)(nil)

// New builds the service. peers nil (an interface holding no Federation) means no peer servers.
func New(peers Peering, state State) *Service { return &Service{peers: peers, state: state} }

// Linked reports whether channel is linked with a peer server.
func (s *Service) Linked(channel string) bool { return s.peers != nil && s.peers.IsLinked(channel) }

// HomeElsewhere reports whether channel's state is decided by a peer server.
func (s *Service) HomeElsewhere(channel string) bool {
	return s.peers != nil && s.peers.HomeElsewhere(channel)
}

// Topic sends a topic change to the home of a channel whose home is a peer: the actor must be
// able to set it here (an unlocked topic, or an operator or half-operator of the channel here).
func (s *Service) Topic(ctx context.Context, a Actor, channel, text string) (bool, error) {
	if !s.HomeElsewhere(channel) {
		return false, nil
	}
	allowed := false
	s.state.Read(func(st *fsm.State) {
		ch, found := st.Channel(channel)
		se, ok := st.Session(a.Session)
		if !found || !ok {
			return
		}
		me, _ := ch.Member(a.Session)
		allowed = !ch.TopicLock() || st.IsChannelOp(ch, &se) || me.HalfOp
	})
	if !allowed {
		return true, ErrNotOperator
	}
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	return true, outcome(s.peers.RequestTopic(ctx, channel, a.Mask, a.DID, text))
}

// Modes sends the crossing modes of changes to a peer home, after checking that the actor is an
// operator here, and returns the rest. With nothing to send, it returns changes and nil.
func (s *Service) Modes(ctx context.Context, a Actor, channel string, changes []fsm.ModeChange) ([]fsm.ModeChange, error) {
	if !s.HomeElsewhere(channel) {
		return changes, nil
	}
	var local []fsm.ModeChange
	var modes []peering.ModeChange
	for _, mc := range changes {
		if f := peering.FederatedModes([]fsm.ModeChange{mc}); len(f) > 0 {
			modes = append(modes, f...)
		} else {
			local = append(local, mc)
		}
	}
	if len(modes) == 0 {
		return local, nil
	}
	if !s.isOp(a, channel) {
		return local, ErrNotOperator
	}
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	return local, outcome(s.peers.RequestChange(ctx, peering.Change{Kind: peering.ChangeMode, Channel: channel,
		Actor: a.Mask, ActorDID: a.DID, Modes: modes}))
}

// Pin sends a pin or unpin to a peer home, after checking that the actor is an operator here.
func (s *Service) Pin(ctx context.Context, a Actor, channel, msgid string, add bool) (bool, error) {
	if !s.HomeElsewhere(channel) {
		return false, nil
	}
	if !s.isOp(a, channel) {
		return true, ErrNotOperator
	}
	kind := peering.ChangePin
	if !add {
		kind = peering.ChangeUnpin
	}
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	return true, outcome(s.peers.RequestChange(ctx, peering.Change{Kind: kind, Channel: channel, Actor: a.Mask,
		ActorDID: a.DID, MsgID: msgid}))
}

// Target sends a kick or invite of a user of the linked peer to that peer (which applies it if the
// actor is an operator there), after checking that the actor is an operator here.
func (s *Service) Target(ctx context.Context, a Actor, kind TargetKind, channel, nick, reason string) (string, bool, error) {
	var pk string
	switch kind {
	case Kick:
		pk = peering.ChangeKick
	case Invite:
		pk = peering.ChangeInvite
	default:
		return "", false, fmt.Errorf("linkroute: unknown target kind %d", kind)
	}
	if !s.Linked(channel) {
		return "", false, nil
	}
	var m fsm.RemoteMember
	s.state.Read(func(st *fsm.State) {
		if rm := st.RemoteByNick(nick); rm != nil && (kind != Kick || rm.InChannel(channel)) {
			m = *rm
		}
	})
	if m.Nick == "" {
		return "", false, nil
	}
	if !s.isOp(a, channel) {
		return m.Nick, true, ErrNotOperator
	}
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	return m.Nick, true, outcome(s.peers.ActOnRemote(ctx, peering.Change{Kind: pk, Channel: channel, Actor: a.Mask,
		ActorDID: a.DID, Target: m.Nick, TargetDID: m.DID, Reason: reason}))
}

// isOp reports whether the actor is an operator of channel in this server's state.
func (s *Service) isOp(a Actor, channel string) bool {
	op := false
	s.state.Read(func(st *fsm.State) {
		ch, found := st.Channel(channel)
		if se, ok := st.Session(a.Session); ok && found {
			op = st.IsChannelOp(ch, &se)
		}
	})
	return op
}

// outcome maps peering's answer to a request onto this package's errors.
func outcome(err error) error {
	var refused *peering.RefusedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &refused):
		return &RefusedError{Why: refused.Why}
	default:
		return fmt.Errorf("%w: %w", ErrLinkDown, err)
	}
}
