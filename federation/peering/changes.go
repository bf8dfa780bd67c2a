package peering

import (
	"context"
	"errors"
	"fmt"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Channel state other than the topic follows the same authority rule: modes (the flags i, t, n,
// m; bans and invite exceptions) and pins are decided by the home. A change made on the
// home by one of its sessions is sent to the other side, which applies it only when the actor is
// an operator in its own state. A change asked for on the other side goes to the home as a
// request (RequestChange), which the home applies when the actor is an operator in the home's
// state and echoes back; the asking side applies the echo as its own request (ownChangeRequest).
// When a link comes up the home sends a snapshot of its flags and bans marked Sync: a sync only
// adds, so it never weakens +n/+i/+t/+m, and it needs no actor. Operators are each server's own:
// who may act is decided by each side's own state, so ops (o, including DID ops of users of the
// other server, granted with MODE #chan +o did:...), nick-bound prefixes (h, v), keys (+k) and +E
// stay local and never cross. Only peers trusted "full" may send changes.

// maxModesPerChange caps the modes one change may carry.
const maxModesPerChange = 16

// federatedModes converts applied fsm mode changes into the ones that cross a link. It returns
// nil when nothing crosses.
func federatedModes(changes []fsm.ModeChange) []ModeChange {
	var out []ModeChange
	for _, mc := range changes {
		switch mc.Mode {
		case "i", "t", "n", "m":
			out = append(out, ModeChange{Add: mc.Add, Mode: mc.Mode})
		case "b", "I":
			out = append(out, ModeChange{Add: mc.Add, Mode: mc.Mode, Arg: mc.Arg})
		}
	}
	return out
}

// FederatedModes is federatedModes for the IRC edge, which turns a MODE on a channel whose home is
// a peer into a request.
func FederatedModes(changes []fsm.ModeChange) []ModeChange { return federatedModes(changes) }

// observeChange queues a mode, pin or unpin made on this node by one of its sessions, when this
// server is the channel's home.
func (f *Federation) observeChange(e *fsm.Event) {
	peer := f.PeerOf(e.Channel)
	o := f.outboxes[peer]
	if o == nil || !f.IsHome(peer) || !f.peers[peer].Trust.MayChangeState() {
		return
	}
	c := Change{Channel: e.Channel, Actor: e.Actor.Hostmask(), ActorDID: e.Actor.DID, AtMS: e.Time}
	switch e.Kind {
	case fsm.EvMode:
		c.Modes = federatedModes(e.Modes)
		if len(c.Modes) == 0 {
			return
		}
		c.Kind = ChangeMode
	case fsm.EvPin:
		c.Kind, c.MsgID = ChangePin, e.MsgID
	case fsm.EvUnpin:
		c.Kind, c.MsgID = ChangeUnpin, e.MsgID
	default:
		return
	}
	o.queueChange(c)
}

// homeModes is the home's current flags and bans of the channels linked with peer, sent (as a
// sync: additions only) when a link comes up.
func (f *Federation) homeModes(peerDID string) []Change {
	var out []Change
	f.cfg.State.Read(func(st *fsm.State) {
		for name := range f.links[peerDID] {
			ch, ok := st.Channel(name)
			if !ok {
				continue
			}
			c := Change{Kind: ChangeMode, Channel: name, Actor: ServerName(f.cfg.ServerDID), Sync: true}
			for mode, on := range map[string]bool{"i": ch.InviteOnly(), "t": ch.TopicLock(), "n": ch.NoExternal(), "m": ch.Moderated()} {
				if on {
					c.Modes = append(c.Modes, ModeChange{Add: true, Mode: mode})
				}
			}
			for _, b := range ch.Bans() {
				if len(c.Modes) < maxModesPerChange {
					c.Modes = append(c.Modes, ModeChange{Add: true, Mode: "b", Arg: b.Mask})
				}
			}
			if len(c.Modes) > 0 {
				out = append(out, c)
			}
		}
	})
	return out
}

// validChange checks a change's shape: it reports false for a change that cannot be applied or
// whose strings would need sanitising.
func validChange(c *Change) bool {
	if (c.ActorDID != "" && !validDID(c.ActorDID)) || c.Actor != sanitizeName(c.Actor) {
		return false
	}
	if c.RequestID != "" && (!validMsgID(c.RequestID) || len(c.RequestSig) > maxNameBytes) {
		return false
	}
	if c.Kind != ChangeKick && c.Kind != ChangeInvite && (c.Target != "" || c.TargetDID != "" || c.Reason != "") {
		return false
	}
	switch c.Kind {
	case ChangeKick, ChangeInvite:
		return c.Target != "" && c.Target == sanitizeName(c.Target) && (c.TargetDID == "" || validDID(c.TargetDID)) &&
			c.Reason == sanitize(c.Reason, 300) && len(c.Modes) == 0 && c.MsgID == "" && !c.Sync
	case ChangePin, ChangeUnpin:
		return validMsgID(c.MsgID) && len(c.Modes) == 0
	case ChangeMode:
	default:
		return false
	}
	if len(c.Modes) == 0 || len(c.Modes) > maxModesPerChange {
		return false
	}
	for _, m := range c.Modes {
		switch m.Mode {
		case "i", "t", "n", "m":
			if m.Arg != "" {
				return false
			}
		case "b", "I":
			if m.Arg == "" || m.Arg != sanitizeName(m.Arg) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// applyChange applies a mode, pin or unpin from a peer under the authority rule.
func (f *Federation) applyChange(ctx context.Context, peer Peer, c Change) (outcome, error) {
	if !validChange(&c) {
		return outcomeMalformed, nil
	}
	if !f.Linked(peer.DID, c.Channel) {
		return outcomeNotLinked, nil
	}
	exists := false
	f.cfg.State.Read(func(st *fsm.State) { exists = st.ChannelExists(c.Channel) })
	if !exists {
		return outcomeNotLinked, nil
	}
	fromHome := !f.IsHome(peer.DID)
	own := f.ownedLocally(c.ActorDID, "")
	if c.Kind == ChangeKick || c.Kind == ChangeInvite {
		return f.applyTargeted(ctx, c, own)
	}
	switch {
	case c.Sync && (!fromHome || c.Kind != ChangeMode || c.RequestID != ""):
		return outcomeMalformed, nil
	case c.Sync:
		// The home's snapshot: additions of flags and bans only, whoever the actor.
		kept := c.Modes[:0]
		for _, m := range c.Modes {
			if m.Add && m.Mode != "I" {
				kept = append(kept, m)
			}
		}
		if c.Modes = kept; len(kept) == 0 {
			return outcomeDuplicate, nil
		}
	case !fromHome && own:
		return outcomeImpostor, nil // a request may not claim one of our users
	case fromHome && own:
		if !f.ownChangeRequest(c) {
			return outcomeImpostor, nil
		}
	case !f.isDIDOp(c.Channel, c.ActorDID):
		return outcomeNotOp, nil
	}
	if c.Kind != ChangeMode {
		root, err := f.cfg.Store.Root(ctx, c.MsgID)
		switch {
		case errors.Is(err, eventstore.ErrNotFound):
			return outcomeNoRoot, nil
		case err != nil:
			return "", err
		case root.Venue != c.Channel || root.MsgID != c.MsgID:
			return outcomeMalformed, nil
		}
	}
	actor := c.Actor
	if actor == "" {
		actor = originName(peer.DID)
	}
	var cmd fsm.Command
	if c.Kind == ChangeMode {
		changes := make([]fsm.ModeChange, len(c.Modes))
		for i, m := range c.Modes {
			changes[i] = fsm.ModeChange{Add: m.Add, Mode: m.Mode, Arg: m.Arg}
		}
		cmd = fsm.FederatedMode{Channel: c.Channel, Changes: changes, SetBy: actor, SetByDID: c.ActorDID, AddOnly: c.Sync}
	} else {
		cmd = fsm.FederatedPin{Channel: c.Channel, MsgID: c.MsgID, Unpin: c.Kind == ChangeUnpin, PinnedBy: actor, PinnedByDID: c.ActorDID}
	}
	res, err := f.cfg.Proposer.Propose(ctx, cmd)
	if err != nil {
		return "", fmt.Errorf("federated %s: %w", c.Kind, err)
	}
	switch res.Code {
	case fsm.OK:
	case fsm.NoChange, fsm.ErrAlreadyPinned, fsm.ErrNotPinned:
		if fromHome {
			return outcomeDuplicate, nil
		}
	default:
		return outcomeMalformed, nil
	}
	if !fromHome {
		if o := f.outboxes[peer.DID]; o != nil {
			c.AtMS = f.cfg.Now().UnixMilli()
			o.queueChange(c) // the home's answer: the same change, request id and signature included
		}
	}
	return outcomeStored, nil
}

// applyTargeted applies a kick or invite of one of this server's users: the actor must be an
// operator here (and not one of our own users, which a peer cannot speak for), and the target a
// session here (matching its DID when one is named; in the channel, for a kick).
func (f *Federation) applyTargeted(ctx context.Context, c Change, own bool) (outcome, error) {
	if own {
		return outcomeImpostor, nil
	}
	if !f.isDIDOp(c.Channel, c.ActorDID) {
		return outcomeNotOp, nil
	}
	target := ""
	f.cfg.State.Read(func(st *fsm.State) {
		se, ok := st.SessionByNick(c.Target)
		if !ok || (c.TargetDID != "" && se.DID != c.TargetDID) {
			return
		}
		if ch, ok := st.Channel(c.Channel); c.Kind == ChangeInvite || (ok && ch.IsMember(se.ID)) {
			target = se.ID
		}
	})
	if target == "" {
		return outcomeNoTarget, nil
	}
	var cmd fsm.Command = fsm.FederatedKick{Channel: c.Channel, Target: target, By: c.Actor, ByDID: c.ActorDID, Reason: c.Reason}
	if c.Kind == ChangeInvite {
		cmd = fsm.FederatedInvite{Channel: c.Channel, Target: target, By: c.Actor, ByDID: c.ActorDID}
	}
	res, err := f.cfg.Proposer.Propose(ctx, cmd)
	if err != nil {
		return "", fmt.Errorf("federated %s: %w", c.Kind, err)
	}
	switch res.Code {
	case fsm.OK:
		return outcomeStored, nil
	case fsm.ErrUserOnChannel:
		return outcomeDuplicate, nil
	case fsm.ErrChanOpNeeded:
		return outcomeNotOp, nil // the founder cannot be kicked from elsewhere
	default:
		return outcomeNoTarget, nil
	}
}
