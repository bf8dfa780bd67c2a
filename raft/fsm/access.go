package fsm

import (
	"slices"
	"sort"
	"strings"
)

// Access questions about channels and DIDs that the core answers for every feature.

// VenueReadable reports whether a reader known by DID ("" = anonymous) may read what happens in
// a venue: a channel as history's read rule says (found is false for a channel that does not
// exist), a DM venue ("dm:<did>,<did>") only for its two participants.
func (s *State) VenueReadable(venue, did string) (found, readable bool) {
	if pair, ok := strings.CutPrefix(venue, "dm:"); ok {
		a, b, _ := strings.Cut(pair, ",")
		return true, did != "" && (did == a || did == b)
	}
	ch := s.channels[venue]
	if ch == nil {
		return false, false
	}
	return true, s.mayRead(ch, did)
}

// ChannelExists reports whether a channel (folded name) exists.
func (s *State) ChannelExists(name string) bool { return s.channels[name] != nil }

// IsChannelOpDID reports whether did may act as an operator of a channel: its founder, a DID op,
// or the DID of a session that is a channel op or a server operator.
func (s *State) IsChannelOpDID(channel, did string) bool {
	ch := s.channels[channel]
	if ch == nil {
		return false
	}
	return s.didIsChannelOp(ch, did)
}

// IsChannelMemberDID reports whether a session of did is a member of a channel.
func (s *State) IsChannelMemberDID(channel, did string) bool {
	ch := s.channels[channel]
	if ch == nil || did == "" {
		return false
	}
	for _, se := range s.sessionsByDID(did) {
		if ch.members[se.ID] != nil {
			return true
		}
	}
	return false
}

// SigningKeysOf returns copies of the public keys filed under did.
func (s *State) SigningKeysOf(did string) []KeyRecord {
	var out []KeyRecord
	for _, k := range s.keys[did] {
		c := *k
		c.PublicKey = slices.Clone(k.PublicKey)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].KID < out[j].KID })
	return out
}

// didIsChannelOp reports whether did may act as an operator of ch: its founder, a DID op, or the
// DID of a session that is a channel op or a server operator.
func (s *State) didIsChannelOp(ch *Channel, did string) bool {
	if did == "" {
		return false
	}
	if did == ch.FounderDID || ch.didOps[did] {
		return true
	}
	for _, se := range s.sessionsByDID(did) {
		if s.isChannelOp(ch, se) {
			return true
		}
	}
	return false
}

// ChannelAccess is what a DID may do with a channel.
type ChannelAccess struct {
	Exists bool
	// Restricted: +i, +k, +E or +s (not discoverable).
	Restricted bool
	// Member: the DID has a session in the channel now.
	Member bool
	// Manager: the DID is the channel's founder or a DID op.
	Manager bool
}

// ChannelAccessOf answers ChannelAccess for a channel (folded name) and a DID ("" anonymous).
func (s *State) ChannelAccessOf(channel, did string) ChannelAccess {
	ch := s.channels[channel]
	if ch == nil {
		return ChannelAccess{}
	}
	acc := ChannelAccess{Exists: true, Restricted: !ch.Discoverable()}
	if did == "" {
		return acc
	}
	acc.Manager = did == ch.FounderDID || ch.didOps[did]
	for id := range ch.members {
		if se := s.sessions[id]; se != nil && se.DID == did {
			acc.Member = true
			break
		}
	}
	return acc
}
