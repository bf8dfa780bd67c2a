package fsm

// TypeSetRealname is the command type of SetRealname.
const TypeSetRealname CommandType = 26

func init() {
	registerCommands(map[CommandType]CommandSpec{TypeSetRealname: spec("set-realname", (*Applier).setRealname)})
}

// MaxRealnameLen bounds a real name (SETNAME).
const MaxRealnameLen = 128

// SetRealname changes a session's real name (IRCv3 setname).
type SetRealname struct {
	Session  string `json:"session"`
	Realname string `json:"realname"`
}

func (SetRealname) CommandType() CommandType { return TypeSetRealname }

func (a *Applier) setRealname(c SetRealname) Result {
	se := a.st.sessions[c.Session]
	if se == nil {
		return Result{Code: ErrNoSuchSession}
	}
	if c.Realname == "" || len(c.Realname) > MaxRealnameLen {
		return Result{Code: ErrInvalid}
	}
	if se.Realname == c.Realname {
		return Result{Code: NoChange}
	}
	se.Realname = c.Realname
	a.emit(Event{Kind: EvSetname, Actor: se.Ref(), Channels: sortedKeys(se.channels), Text: c.Realname})
	return Result{Code: OK}
}
