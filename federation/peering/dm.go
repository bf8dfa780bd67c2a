package peering

import (
	"strings"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// Direct messages between users of linked servers travel as messages do (Event, with their
// dm:<didA>,<didB> venue, msgid and signature), from the sending node's event store after the
// same cursors, with their edits and deletes. A DM a user of this server sent goes to a peer when
// the other party is a user that peer has shown present in a channel linked with it (fsm's remote
// members): that is how this server knows where the DID lives.
//
// A DM from a peer is accepted only when its venue names the sender and a user of this server (a
// DID with a session here, a nick owned here or a session key registered here), and the sender is not a user of this
// server: a peer-stamped DM that claims a local user as its sender is never delivered or stored
// (freeq-reference §5). It is then checked, stored, delivered to the recipient's sessions and
// spread to the other nodes of the cluster as a channel message from the peer is.

const dmPrefix = "dm:"

func isDMVenue(venue string) bool { return strings.HasPrefix(venue, dmPrefix) }

// dmOther returns the party of a dm: venue other than did; ok is false when the venue is not a
// canonical DM venue (two valid, distinct DIDs in sorted order) or does not name did.
func dmOther(venue, did string) (other string, ok bool) {
	pair, found := strings.CutPrefix(venue, dmPrefix)
	if !found || did == "" {
		return "", false
	}
	a, b, found := strings.Cut(pair, ",")
	if !found || a >= b || !validDID(a) || !validDID(b) {
		return "", false
	}
	switch did {
	case a:
		return b, true
	case b:
		return a, true
	}
	return "", false
}

// dmForPeer reports whether a DM sent here by senderDID goes to peer: the other party is one of
// the peer's users present in a linked channel.
func (f *Federation) dmForPeer(peerDID, venue, senderDID string) bool {
	other, ok := dmOther(venue, senderDID)
	if !ok {
		return false
	}
	present := false
	f.cfg.State.Read(func(st *fsm.State) {
		for m := range st.RemoteMembers() {
			if m.Peer == peerDID && m.DID == other {
				present = true
				return
			}
		}
	})
	return present
}

// localUser reports whether did is a user of this server (ownedLocally): it has a session here,
// owns a nick here, registered a session key here, or is this server (or one of its nodes' keys).
func (f *Federation) localUser(did string) bool { return f.ownedLocally(did, "") }

// inboundDM checks the parties of a DM (or of an edit or delete of one) from a peer: "" when it
// may be applied.
func (f *Federation) inboundDM(venue, senderDID string) outcome {
	other, ok := dmOther(venue, senderDID)
	switch {
	case !ok:
		return outcomeMalformed
	case f.localUser(senderDID):
		return outcomeImpostor
	case !f.localUser(other):
		return outcomeNoTarget
	}
	return ""
}
