package fsm

// Read methods of the IRC conformance work that reach state outside this package.

// RenamedTo reports where a JOIN of channel name (folded) should go at time now (unix ms): the
// current name of the channel renamed away from it, when no channel has that name, the
// redirection is younger than RedirectTTL, and the channel it leads to still exists.
func (s *State) RenamedTo(name string, now int64) (string, bool) {
	if s.redirects == nil || s.channels[name] != nil {
		return "", false
	}
	r, ok := s.redirects.Names[name]
	if !ok || now-r.At > RedirectTTL || s.channels[r.To] == nil {
		return "", false
	}
	return r.To, true
}
