package fsm

// TypeSetBot is the command type of SetBot.
const TypeSetBot CommandType = 27

func init() {
	registerCommands(map[CommandType]CommandSpec{TypeSetBot: spec("set-bot", (*Applier).setBot)})
}

// SetBot sets or clears a session's bot mode (user mode +B, IRCv3 bot-mode).
type SetBot struct {
	Session string `json:"session"`
	Bot     bool   `json:"bot"`
}

func (SetBot) CommandType() CommandType { return TypeSetBot }

func (a *Applier) setBot(c SetBot) Result {
	se := a.st.sessions[c.Session]
	if se == nil {
		return Result{Code: ErrNoSuchSession}
	}
	if se.Bot == c.Bot {
		return Result{Code: NoChange}
	}
	se.Bot = c.Bot
	return Result{Code: OK}
}

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
	se := s.sessionByNick(nick)
	return se != nil && se.DID == did && se.Bot
}
