package meta

import (
	"maps"
	"sort"
	"strings"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// View reads the metadata of a state for the gateways. Get it with Of inside Machine.Read; it is
// valid during that callback only, but what its methods return are copies that callers may keep.
type View struct {
	st *fsm.State
	m  *Store
}

// Of is the metadata's view of st.
func Of(st *fsm.State) View { return View{st, section.Of(st)} }

// OwnerOf is the owner of a session's user metadata: its DID, or the session itself for a guest;
// "" when the session is gone.
func (v View) OwnerOf(sessionID string) string {
	se, ok := v.st.Session(sessionID)
	if !ok {
		return ""
	}
	return ownerOf(&se)
}

// Keys is a copy of an owner's keys (nil when it has none).
func (v View) Keys(owner string) map[string]string {
	if v.m == nil || len(v.m.Owners[owner]) == 0 {
		return nil
	}
	return maps.Clone(v.m.Owners[owner])
}

// Target is what a METADATA target names, as seen by the session asking.
type Target struct {
	Nick     string // a user's nick ("" for a channel)
	Channel  string // a channel's folded name ("" for a user)
	Owner    string // whose metadata it is (see OwnerOf)
	Self     bool   // the asking session's own user
	Op       bool   // the asking session is an operator of the channel
	Readable bool   // the asking session may see the channel
	Members  int    // the channel's members
}

// Resolve resolves target ("*" for oneself, a nick or a channel) for session id (authenticated
// as did); ok is false when it names nothing.
func (v View) Resolve(target, id, did string) (t Target, ok bool) {
	me, haveMe := v.st.Session(id)
	if target == "*" || (haveMe && fsm.Fold(target) == fsm.Fold(me.Nick)) {
		if !haveMe {
			return t, false
		}
		return Target{Nick: me.Nick, Owner: ownerOf(&me), Self: true, Readable: true}, true
	}
	if target != "" && (target[0] == '#' || target[0] == '&') {
		ch, ok := v.st.Channel(fsm.Fold(target))
		if !ok {
			return t, false
		}
		return Target{Channel: ch.Name(), Owner: ch.Name(), Op: haveMe && v.st.IsChannelOp(ch, &me),
			Readable: ch.CanRead(id, did), Members: ch.MemberCount()}, true
	}
	se, ok := v.st.SessionByNick(target)
	if !ok {
		return t, false
	}
	return Target{Nick: se.Nick, Owner: ownerOf(&se), Readable: true}, true
}

// NickKeys is one user's nick and metadata.
type NickKeys struct {
	Nick string
	Keys map[string]string
}

// Members lists the members of a channel that have metadata, with it, sorted by nick.
func (v View) Members(channel string) []NickKeys {
	ch, ok := v.st.Channel(channel)
	if !ok || v.m == nil {
		return nil
	}
	var out []NickKeys
	for id := range ch.Members() {
		se, ok := v.st.Session(id)
		if !ok {
			continue
		}
		if keys := v.Keys(ownerOf(&se)); keys != nil {
			out = append(out, NickKeys{Nick: se.Nick, Keys: keys})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Nick < out[j].Nick })
	return out
}

// SessionsOf lists the sessions whose user metadata belongs to owner (a DID's sessions, or a
// guest's own).
func (v View) SessionsOf(owner string) []string {
	if id, guest := strings.CutPrefix(owner, "session:"); guest {
		if _, ok := v.st.Session(id); ok {
			return []string{id}
		}
		return nil
	}
	var out []string
	for _, se := range v.st.SessionsByDID(owner) {
		out = append(out, se.ID)
	}
	return out
}
