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
