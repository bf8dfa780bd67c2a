package peering

import (
	"context"
	"fmt"
	"time"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// Presence: each node sends the joins, parts (and kicks), quits and nick changes of its own
// sessions in linked channels (in memory, bounded), and any node sends a snapshot of the whole
// cluster's members of each linked channel (read from the replicated state) when its link comes
// up or the peer asks for one (Batch.WantPresence). Peers trusted "relay" or "full" may send
// presence.
//
// The receiving node spreads a peer's presence to the rest of its cluster through Raft
// (fsm.RemotePresence): it is small, rare next to messages, and has to be in the state every node
// reads for NAMES, WHO and WHOIS anyway, with the join checked against the channel's bans in the
// same deterministic step. (The intra-cluster exchange carries stored messages, which presence is
// not.) Remote members are shown with the peer's server name as their host. A member whose DID or
// nick belongs to this server (a session, an owned nick, a key registered here) is refused, as is a join that the channel's bans (+b nick!user@host or
// +b did:...) match.
//
// When a node's link to a peer drops (its stream to the peer fails or cannot be opened), it
// forgets that peer's members cluster-wide (fsm.RemoteClear: they are shown leaving) and asks for
// a snapshot with its next envelope; a node that starts asks too.

// Limits on presence.
const (
	maxQueuedPresence  = 1000
	maxSnapshotMembers = 1000
)

// observePresence queues presence changes of this node's own sessions for the peers they concern.
func (f *Federation) observePresence(e *fsm.Event) {
	own := func(r fsm.SessionRef) bool { return r.ID != "" && r.Node == f.cfg.NodeName }
	switch e.Kind {
	case fsm.EvJoin, fsm.EvPart:
		if !own(e.Actor) {
			return
		}
		kind := PresenceJoin
		if e.Kind == fsm.EvPart {
			kind = PresencePart
		}
		f.queuePresence(f.PeerOf(e.Channel), Presence{Kind: kind, Channel: e.Channel, Nick: e.Actor.Nick, User: e.Actor.User, DID: e.Actor.DID, Reason: e.Text})
	case fsm.EvKick:
		if !own(e.Target) {
			return
		}
		f.queuePresence(f.PeerOf(e.Channel), Presence{Kind: PresencePart, Channel: e.Channel, Nick: e.Target.Nick, User: e.Target.User, DID: e.Target.DID, Reason: e.Text})
	case fsm.EvQuit, fsm.EvNick:
		if !own(e.Actor) {
			return
		}
		p := Presence{Kind: PresenceQuit, Nick: e.Actor.Nick, User: e.Actor.User, DID: e.Actor.DID, Reason: e.Text}
		if e.Kind == fsm.EvNick {
			p = Presence{Kind: PresenceNick, Nick: e.OldNick, NewNick: e.Actor.Nick, User: e.Actor.User, DID: e.Actor.DID}
		}
		sent := map[string]bool{}
		for _, ch := range e.Channels {
			if peer := f.PeerOf(ch); peer != "" && !sent[peer] {
				sent[peer] = true
				f.queuePresence(peer, p)
			}
		}
	}
}

func (f *Federation) queuePresence(peerDID string, p Presence) {
	o := f.outboxes[peerDID]
	if o == nil {
		return
	}
	o.mu.Lock()
	if len(o.presence) < maxQueuedPresence {
		o.presence = append(o.presence, p)
	} else {
		o.synced = false // too much at once: the next envelope carries a snapshot instead
		o.epoch++
	}
	o.mu.Unlock()
	o.kick()
}

// presenceSnapshot is this cluster's members of each channel linked with peer.
func (f *Federation) presenceSnapshot(peerDID string) []Presence {
	var out []Presence
	f.cfg.State.Read(func(st *fsm.State) {
		for name := range f.links[peerDID] {
			p := Presence{Kind: PresenceMembers, Channel: name, Members: []PresenceMember{}}
			if ch, ok := st.Channel(name); ok {
				for _, id := range ch.MemberIDs() {
					if se, ok := st.Session(id); ok && len(p.Members) < maxSnapshotMembers {
						p.Members = append(p.Members, PresenceMember{Nick: se.Nick, User: se.User, DID: se.DID})
					}
				}
			}
			out = append(out, p)
		}
	})
	return out
}

// linkLost forgets a peer's members cluster-wide after this node's link to it dropped.
func (f *Federation) linkLost(ctx context.Context, peerDID string) {
	if f.cfg.Proposer == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := f.cfg.Proposer.Propose(ctx, fsm.RemotePresence{Peer: peerDID, Op: fsm.RemoteClear, Reason: "Link to " + ServerName(peerDID) + " lost"}); err != nil {
		f.log.Warn("forgetting a peer's members", "peer", peerDID, "err", err)
	}
}

// remoteMember sanitises a member from a peer: the host is the peer's server name.
func remoteMember(peer Peer, nick, user, did string) (fsm.RemoteMember, bool) {
	nick = sanitizeName(nick)
	user = sanitizeName(sanitize(user, 32))
	if user == "" {
		user = "~remote"
	}
	if nick == "" || len(nick) > fsm.MaxNickLen || nick[0] == '#' || nick[0] == '&' || (did != "" && !validDID(did)) {
		return fsm.RemoteMember{}, false
	}
	return fsm.RemoteMember{Nick: nick, User: user, Host: originName(peer.DID), DID: did}, true
}

// applyPresence checks one presence change from a peer and proposes it.
func (f *Federation) applyPresence(ctx context.Context, peer Peer, p Presence) (outcome, error) {
	cmd := fsm.RemotePresence{Peer: peer.DID, Channel: p.Channel, Reason: sanitize(p.Reason, 300)}
	switch p.Kind {
	case PresenceJoin, PresencePart, PresenceMembers:
		if !f.Linked(peer.DID, p.Channel) {
			return outcomeNotLinked, nil
		}
	case PresenceQuit, PresenceNick:
		cmd.Channel = ""
	default:
		return outcomeMalformed, nil
	}
	if p.Kind == PresenceMembers {
		if len(p.Members) > maxSnapshotMembers {
			return outcomeMalformed, nil
		}
		cmd.Op = fsm.RemoteMembers
		for _, m := range p.Members {
			if rm, ok := remoteMember(peer, m.Nick, m.User, m.DID); ok && !f.ownedLocally(rm.DID, rm.Nick) {
				cmd.Members = append(cmd.Members, rm)
			}
		}
		return f.proposePresence(ctx, cmd)
	}
	m, ok := remoteMember(peer, p.Nick, p.User, p.DID)
	if !ok {
		return outcomeMalformed, nil
	}
	cmd.Member = m
	switch p.Kind {
	case PresenceJoin:
		if f.ownedLocally(m.DID, m.Nick) {
			return outcomeImpostor, nil
		}
		cmd.Op = fsm.RemoteJoin
	case PresencePart:
		cmd.Op = fsm.RemotePart
	case PresenceQuit:
		cmd.Op = fsm.RemoteQuit
	case PresenceNick:
		newNick, ok := remoteMember(peer, p.NewNick, "", "")
		if !ok {
			return outcomeMalformed, nil
		}
		if f.ownedLocally("", newNick.Nick) {
			return outcomeImpostor, nil
		}
		cmd.Op, cmd.NewNick = fsm.RemoteNick, newNick.Nick
	}
	return f.proposePresence(ctx, cmd)
}

func (f *Federation) proposePresence(ctx context.Context, cmd fsm.RemotePresence) (outcome, error) {
	res, err := f.cfg.Proposer.Propose(ctx, cmd)
	if err != nil {
		return "", fmt.Errorf("remote presence: %w", err)
	}
	switch res.Code {
	case fsm.OK:
		return outcomeStored, nil
	case fsm.NoChange:
		return outcomeDuplicate, nil
	case fsm.ErrBanned:
		return outcomeBanned, nil
	default:
		return outcomeMalformed, nil
	}
}
