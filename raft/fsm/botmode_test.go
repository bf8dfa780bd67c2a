package fsm

import "testing"

func TestSetBot(t *testing.T) {
	bot := with(world(), SetBot{Session: "s-alice", Bot: true})
	cases := []applyCase{
		{name: "set", setup: world(), cmd: SetBot{Session: "s-alice", Bot: true}, want: Result{Code: OK},
			check: func(t *testing.T, st *State, _ int64) {
				if !st.sessions["s-alice"].Bot {
					t.Fatal("not a bot")
				}
			}},
		{name: "already set", setup: bot, cmd: SetBot{Session: "s-alice", Bot: true}, want: Result{Code: NoChange}},
		{name: "cleared", setup: bot, cmd: SetBot{Session: "s-alice"}, want: Result{Code: OK},
			check: func(t *testing.T, st *State, _ int64) {
				if st.sessions["s-alice"].Bot {
					t.Fatal("still a bot")
				}
			}},
		{name: "no session", setup: world(), cmd: SetBot{Session: "s-none", Bot: true}, want: Result{Code: ErrNoSuchSession}},
	}
	runApplyCases(t, cases)
}
