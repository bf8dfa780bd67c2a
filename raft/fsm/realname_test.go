package fsm

import (
	"strings"
	"testing"
)

func TestSetRealname(t *testing.T) {
	cases := []applyCase{
		{name: "changed", setup: with(world(), Join{Session: "s-alice", Channel: "#c"}), cmd: SetRealname{Session: "s-alice", Realname: "Alice Liddell"},
			want: Result{Code: OK}, events: []EventKind{EvSetname},
			check: func(t *testing.T, st *State, _ int64) {
				if st.sessions["s-alice"].Realname != "Alice Liddell" {
					t.Fatalf("realname %q", st.sessions["s-alice"].Realname)
				}
			}},
		{name: "unchanged", setup: world(), cmd: SetRealname{Session: "s-alice", Realname: "Real alice"}, want: Result{Code: NoChange}},
		{name: "empty", setup: world(), cmd: SetRealname{Session: "s-alice"}, want: Result{Code: ErrInvalid}},
		{name: "too long", setup: world(), cmd: SetRealname{Session: "s-alice", Realname: strings.Repeat("r", MaxRealnameLen+1)}, want: Result{Code: ErrInvalid}},
		{name: "no session", setup: world(), cmd: SetRealname{Session: "s-none", Realname: "x"}, want: Result{Code: ErrNoSuchSession}},
	}
	runApplyCases(t, cases)
}
