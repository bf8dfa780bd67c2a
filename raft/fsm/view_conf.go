package fsm

import (
	"sort"
	"strings"
)

// Read methods the IRC conformance features (MONITOR, metadata, channel renames) use from outside
// this package, so that they never index the state's maps themselves.

// SessionNick is the current nick of session id, "" when the session is gone.
func (s *State) SessionNick(id string) string {
	if se := s.sessions[id]; se != nil {
		return se.Nick
	}
	return ""
}

// SessionIsBot reports whether session id is in bot mode (+B).
func (s *State) SessionIsBot(id string) bool {
	se := s.sessions[id]
	return se != nil && se.Bot
}

// NickIsBot reports whether the session using nick, authenticated as did ("" for a guest), is in
// bot mode.
func (s *State) NickIsBot(nick, did string) bool {
	se := s.SessionByNick(nick)
	return se != nil && se.DID == did && se.Bot
}

// MetadataTarget is what a METADATA target names, as seen by the session asking.
type MetadataTarget struct {
	Nick     string // a user's nick ("" for a channel)
	Channel  string // a channel's folded name ("" for a user)
	Owner    string // whose metadata it is (see MetadataOwnerOf)
	Self     bool   // the asking session's own user
	Op       bool   // the asking session is an operator of the channel
	Readable bool   // the asking session may see the channel
	Members  int    // the channel's members
}

// ResolveMetadataTarget resolves target ("*" for oneself, a nick or a channel) for session id
// (authenticated as did); ok is false when it names nothing.
func (s *State) ResolveMetadataTarget(target, id, did string) (t MetadataTarget, ok bool) {
	me := s.sessions[id]
	if target == "*" || (me != nil && Fold(target) == Fold(me.Nick)) {
		if me == nil {
			return t, false
		}
		return MetadataTarget{Nick: me.Nick, Owner: sessionMetadataOwner(me), Self: true, Readable: true}, true
	}
	if target != "" && (target[0] == '#' || target[0] == '&') {
		ch := s.channels[Fold(target)]
		if ch == nil {
			return t, false
		}
		return MetadataTarget{Channel: ch.Name, Owner: ch.Name, Op: me != nil && s.IsChannelOp(ch, me),
			Readable: ch.CanRead(id, did), Members: len(ch.members)}, true
	}
	se := s.SessionByNick(target)
	if se == nil {
		return t, false
	}
	return MetadataTarget{Nick: se.Nick, Owner: sessionMetadataOwner(se), Readable: true}, true
}

// NickMetadata is one user's nick and metadata.
type NickMetadata struct {
	Nick string
	Keys map[string]string
}

// MembersMetadata lists the members of a channel that have metadata, with it, sorted by nick.
func (s *State) MembersMetadata(channel string) []NickMetadata {
	ch := s.channels[channel]
	if ch == nil || s.metadata == nil {
		return nil
	}
	var out []NickMetadata
	for id := range ch.members {
		se := s.sessions[id]
		if se == nil {
			continue
		}
		if keys := s.Metadata(sessionMetadataOwner(se)); keys != nil {
			out = append(out, NickMetadata{Nick: se.Nick, Keys: keys})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Nick < out[j].Nick })
	return out
}

// SessionIDsOfOwner lists the sessions whose user metadata belongs to owner (a DID's sessions, or
// a guest's own).
func (s *State) SessionIDsOfOwner(owner string) []string {
	if id, guest := strings.CutPrefix(owner, "session:"); guest {
		if s.sessions[id] != nil {
			return []string{id}
		}
		return nil
	}
	var out []string
	for _, se := range s.SessionsByDID(owner) {
		out = append(out, se.ID)
	}
	return out
}

// SessionHostmasks maps each of ids that is a session to its nick!user@host.
func (s *State) SessionHostmasks(ids []string) map[string]string {
	out := make(map[string]string, len(ids))
	for _, id := range ids {
		if se := s.sessions[id]; se != nil {
			out[id] = se.Hostmask()
		}
	}
	return out
}
