package fsm

// Read methods the IRC conformance features (MONITOR, metadata, channel renames) use from outside
// this package, so that they never index the state's maps themselves.

// SessionNick is the current nick of session id, "" when the session is gone.
func (s *State) SessionNick(id string) string {
	if se := s.Sessions[id]; se != nil {
		return se.Nick
	}
	return ""
}
