package fsm

// TypeSetInvisible is the command type of SetInvisible.
const TypeSetInvisible CommandType = 80

func init() {
	registerCommands(map[CommandType]CommandSpec{TypeSetInvisible: spec("set-invisible", (*Applier).setInvisible)})
}

// SetInvisible sets or clears a session's user mode +i (invisible): a WHO by mask lists the
// session only to itself, to operators and to sessions that share a channel with it.
type SetInvisible struct {
	Session   string `json:"session"`
	Invisible bool   `json:"invisible"`
}

func (SetInvisible) CommandType() CommandType { return TypeSetInvisible }

func (a *Applier) setInvisible(c SetInvisible) Result {
	se := a.st.sessions[c.Session]
	if se == nil {
		return Result{Code: ErrNoSuchSession}
	}
	if se.Invisible == c.Invisible {
		return Result{Code: NoChange}
	}
	se.Invisible = c.Invisible
	return Result{Code: OK}
}

// SharesChannel reports whether two sessions are members of a common channel.
func (s *State) SharesChannel(a, b string) bool {
	x, y := s.sessions[a], s.sessions[b]
	if x == nil || y == nil {
		return false
	}
	for name := range x.channels {
		if y.channels[name] {
			return true
		}
	}
	return false
}
