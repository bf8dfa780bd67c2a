package fsm

import "testing"

func TestSetInvisible(t *testing.T) {
	inv := with(world(), SetInvisible{Session: "s-alice", Invisible: true})
	cases := []applyCase{
		{name: "set", setup: world(), cmd: SetInvisible{Session: "s-alice", Invisible: true}, want: Result{Code: OK},
			check: func(t *testing.T, st *State, _ int64) {
				if !st.sessions["s-alice"].Invisible {
					t.Fatal("not invisible")
				}
			}},
		{name: "already set", setup: inv, cmd: SetInvisible{Session: "s-alice", Invisible: true}, want: Result{Code: NoChange}},
		{name: "cleared", setup: inv, cmd: SetInvisible{Session: "s-alice"}, want: Result{Code: OK},
			check: func(t *testing.T, st *State, _ int64) {
				if st.sessions["s-alice"].Invisible {
					t.Fatal("still invisible")
				}
			}},
		{name: "no session", setup: world(), cmd: SetInvisible{Session: "s-none", Invisible: true}, want: Result{Code: ErrNoSuchSession}},
	}
	runApplyCases(t, cases)
}
