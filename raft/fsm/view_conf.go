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

// SessionIsBot reports whether session id is in bot mode (+B).
func (s *State) SessionIsBot(id string) bool {
	se := s.Sessions[id]
	return se != nil && se.Bot
}

// NickIsBot reports whether the session using nick, authenticated as did ("" for a guest), is in
// bot mode.
func (s *State) NickIsBot(nick, did string) bool {
	se := s.SessionByNick(nick)
	return se != nil && se.DID == did && se.Bot
}
