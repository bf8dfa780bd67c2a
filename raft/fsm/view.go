package fsm

import (
	"iter"
	"maps"
	"slices"
)

// The read API. Code outside this package reads the state only through these methods, under
// Machine.Read. What they hand out is a copy or a read-only view (readview.go), never a record
// Apply changes: sessions come as Session values (their exported fields are plain values; the
// channel set behind InChannel and Channels is the live one, so read it inside the callback only),
// channels as ChannelView and keys as KeyView. Iterators walk the maps in place; their order is
// unspecified unless a method says otherwise.

// Index is the Raft index of the last applied entry.
func (s *State) Index() uint64 { return s.index }

// Channel returns a view of the channel with the folded name; ok is false when there is none.
func (s *State) Channel(name string) (ch ChannelView, ok bool) {
	c := s.channels[name]
	return ChannelView{c}, c != nil
}

// Channels iterates over views of every channel.
func (s *State) Channels() iter.Seq[ChannelView] {
	return func(yield func(ChannelView) bool) {
		for _, c := range s.channels {
			if !yield(ChannelView{c}) {
				return
			}
		}
	}
}

// ChannelCount is the number of channels.
func (s *State) ChannelCount() int { return len(s.channels) }

// Session returns a copy of the session with the id; ok is false when there is none.
func (s *State) Session(id string) (se Session, ok bool) { return sessionCopy(s.sessions[id]) }

// Sessions iterates over copies of every session of every node.
func (s *State) Sessions() iter.Seq[Session] {
	return func(yield func(Session) bool) {
		for _, se := range s.sessions {
			if !yield(*se) {
				return
			}
		}
	}
}

// sessionCopy is a copy of se for a reader; ok is false when se is nil. The copy shares only the
// unexported channel set, which nothing outside this package can write.
func sessionCopy(se *Session) (Session, bool) {
	if se == nil {
		return Session{}, false
	}
	return *se, true
}

// SessionCount is the number of sessions on all nodes.
func (s *State) SessionCount() int { return len(s.sessions) }

// NickInUse reports whether a session is using the nick now.
func (s *State) NickInUse(nick string) bool { return s.sessionByNick(nick) != nil }

// NickOwner returns the DID owning the folded nick, or "".
func (s *State) NickOwner(folded string) string { return s.nickOwners[folded] }

// OwnedNick returns the folded nick did owns, or "".
func (s *State) OwnedNick(did string) string { return s.didNicks[did] }

// NickOwners iterates over the owned nicks: folded nick and owning DID.
func (s *State) NickOwners() iter.Seq2[string, string] { return maps.All(s.nickOwners) }

// NickOwnerCount is the number of owned nicks.
func (s *State) NickOwnerCount() int { return len(s.nickOwners) }

// KeysOf returns the keys filed under did (retired and expired ones too), sorted by kid.
func (s *State) KeysOf(did string) []KeyView {
	byKID := s.keys[did]
	out := make([]KeyView, 0, len(byKID))
	for _, kid := range slices.Sorted(maps.Keys(byKID)) {
		out = append(out, KeyView{byKID[kid]})
	}
	return out
}

// AllKeys iterates over every key filed: its DID and the key.
func (s *State) AllKeys() iter.Seq2[string, KeyView] {
	return func(yield func(string, KeyView) bool) {
		for did, byKID := range s.keys {
			for _, k := range byKID {
				if !yield(did, KeyView{k}) {
					return
				}
			}
		}
	}
}

// Key returns the key filed under did with kid; ok is false when there is none.
func (s *State) Key(did, kid string) (k KeyView, ok bool) {
	r := s.keys[did][kid]
	return KeyView{r}, r != nil
}

// Favorites returns a copy of did's favourite channel names, in their order.
func (s *State) Favorites(did string) []string { return slices.Clone(s.favorites[did]) }

// RemoteMembers iterates over the users of peer servers present in linked channels.
func (s *State) RemoteMembers() iter.Seq[*RemoteMember] { return maps.Values(s.remoteMembers) }

// LocalMembersVersion changes whenever the set of local members of any channel changes (a join,
// a part, a rename, a restore): a reader that kept LocalMembers' ids may keep using them while it
// reads the same version.
func (s *State) LocalMembersVersion() uint64 { return s.localVersion }

// LocalMembers iterates over the members of a channel whose sessions are on this node (the node
// named by Machine.SetLocalNode): session id and prefixes. Nothing when no such channel exists.
func (s *State) LocalMembers(channel string) iter.Seq2[string, Member] {
	return func(yield func(string, Member) bool) {
		for id, m := range s.local[channel] {
			if !yield(id, *m) {
				return
			}
		}
	}
}

// Member returns a session's prefixes in the channel; ok is false when it is not a member.
func (c *Channel) Member(id string) (m Member, ok bool) {
	p := c.members[id]
	if p == nil {
		return Member{}, false
	}
	return *p, true
}

// IsMember reports whether the session is a member of the channel.
func (c *Channel) IsMember(id string) bool { return c.members[id] != nil }

// MemberCount is the number of member sessions.
func (c *Channel) MemberCount() int { return len(c.members) }

// Members iterates over the member sessions: session id and prefixes.
func (c *Channel) Members() iter.Seq2[string, Member] {
	return func(yield func(string, Member) bool) {
		for id, m := range c.members {
			if !yield(id, *m) {
				return
			}
		}
	}
}

// IsDIDOp reports whether did is one of the channel's DID operators.
func (c *Channel) IsDIDOp(did string) bool { return c.didOps[did] }

// DIDOps returns the channel's DID operators, sorted.
func (c *Channel) DIDOps() []string { return sortedKeys(c.didOps) }

// InChannel reports whether the session is a member of the folded channel.
func (s *Session) InChannel(name string) bool { return s.channels[name] }

// ChannelCount is the number of channels the session is in.
func (s *Session) ChannelCount() int { return len(s.channels) }

// Channels iterates over the folded names of the session's channels.
func (s *Session) Channels() iter.Seq[string] { return maps.Keys(s.channels) }

// ChannelNames returns the folded names of the session's channels, sorted.
func (s *Session) ChannelNames() []string { return sortedKeys(s.channels) }

// InChannel reports whether the remote user is present in the folded channel.
func (m *RemoteMember) InChannel(name string) bool { return m.channels[name] }

// ChannelNames returns the folded names of the channels the remote user is in, sorted.
func (m *RemoteMember) ChannelNames() []string { return sortedKeys(m.channels) }

// localIndex keeps State.local, the members of each channel whose sessions are on this node:
// derived from the channels and sessions and the local node's name, never encoded.

// indexMember files a new membership in the local index when the session is on this node.
func (s *State) indexMember(channel string, se *Session, m *Member) {
	if s.node == "" || se.Node != s.node {
		return
	}
	if s.local == nil {
		s.local = map[string]map[string]*Member{}
	}
	byID := s.local[channel]
	if byID == nil {
		byID = map[string]*Member{}
		s.local[channel] = byID
	}
	byID[se.ID] = m
	s.localVersion++
}

// unindexMember drops a membership from the local index.
func (s *State) unindexMember(channel, id string) {
	if byID := s.local[channel]; byID != nil {
		if _, ok := byID[id]; ok {
			s.localVersion++
		}
		delete(byID, id)
		if len(byID) == 0 {
			delete(s.local, channel)
		}
	}
}

// rebuildLocal derives the local index from the whole state.
func (s *State) rebuildLocal() {
	s.local = nil
	s.localVersion++
	if s.node == "" {
		return
	}
	for name, ch := range s.channels {
		for id, m := range ch.members {
			if se := s.sessions[id]; se != nil {
				s.indexMember(name, se, m)
			}
		}
	}
}

// Prefixes returns the session's prefix characters in the channel (see Member.Prefixes); "" when
// it is not a member.
func (c *Channel) Prefixes(id string, multi bool) string {
	if m := c.members[id]; m != nil {
		return m.Prefixes(multi)
	}
	return ""
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
