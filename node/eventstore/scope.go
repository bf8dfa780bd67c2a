package eventstore

import "strings"

// noIncarnation is bound as the current incarnation of a channel that does not exist: no row holds
// it (incarnations are never empty of letters and digits), so only public rows pass.
const noIncarnation = "\x00"

// isChannelVenue reports whether venue names a channel (as opposed to a DM).
func isChannelVenue(venue string) bool {
	return strings.HasPrefix(venue, "#") || strings.HasPrefix(venue, "&")
}

// stamp fills in where in its channel's life a channel message is written, unless it already
// says (a message copied from another node carries the stamp of the node that stored it first).
func (s *Store) stamp(m *Message) {
	if s.scope == nil || m.Incarnation != "" || !isChannelVenue(m.Venue) {
		return
	}
	inc, public, ok := s.scope(m.Venue)
	if !ok {
		m.Incarnation, m.Public = "", false
		return
	}
	m.Incarnation, m.Public = inc, public
}

// scopeArgs are the values bound to a view's scope parameters for venue (see scope45).
func (s *Store) scopeArgs(venue string) (all bool, incarnation string) {
	if s.scope == nil || !isChannelVenue(venue) {
		return true, ""
	}
	inc, _, ok := s.scope(venue)
	if !ok {
		return false, noIncarnation
	}
	return false, inc
}

// Visible reports whether a message read by msgid (Get, Root, Current) may be served through its
// venue as the venue is now, by the rule the views follow: always for a DM venue or a store
// without Scope; for a channel, when the channel exists and the message belongs to its current
// incarnation or was public when written. Callers still check who may read the channel.
func (s *Store) Visible(m Message) bool {
	all, inc := s.scopeArgs(m.Venue)
	return all || m.Public || m.Incarnation == inc
}
