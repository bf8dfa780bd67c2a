package fsm

import (
	"fmt"
	"testing"
)

func TestApplyRenameRedirects(t *testing.T) {
	base := with(world(), Join{Session: "s-alice", Channel: "#old"}, Join{Session: "s-bob", Channel: "#old"})
	renamed := with(base, RenameChannel{Session: "s-alice", Channel: "#old", NewName: "#mid"})
	redirect := func(t *testing.T, st *State, at int64, from, want string) {
		t.Helper()
		got, ok := st.RenamedTo(from, at)
		if want == "" && ok || want != "" && got != want {
			t.Errorf("RenamedTo(%s) = %q %v, want %q", from, got, ok, want)
		}
	}
	runApplyCases(t, []applyCase{
		{
			name: "a rename redirects the old name", setup: base, cmd: RenameChannel{Session: "s-alice", Channel: "#old", NewName: "#new"},
			want: Result{Code: OK}, events: []EventKind{EvRename},
			check: func(t *testing.T, st *State, at int64) {
				redirect(t, st, at, "#old", "#new")
				redirect(t, st, at+RedirectTTL, "#old", "#new")
				redirect(t, st, at+RedirectTTL+1, "#old", "") // expired
				redirect(t, st, at, "#new", "")               // a channel has that name
				redirect(t, st, at, "#never", "")
			},
		},
		{
			name: "a chain leads to the newest name", setup: renamed, cmd: RenameChannel{Session: "s-alice", Channel: "#mid", NewName: "#new"},
			want: Result{Code: OK}, events: []EventKind{EvRename},
			check: func(t *testing.T, st *State, at int64) {
				redirect(t, st, at, "#old", "#new")
				redirect(t, st, at, "#mid", "#new")
			},
		},
		{
			name: "renamed back", setup: renamed, cmd: RenameChannel{Session: "s-alice", Channel: "#mid", NewName: "#old"},
			want: Result{Code: OK}, events: []EventKind{EvRename},
			check: func(t *testing.T, st *State, at int64) {
				if _, kept := st.redirects.Names["#old"]; kept {
					t.Error("the name a channel has again is still redirected")
				}
				redirect(t, st, at, "#mid", "#old")
			},
		},
		{
			name: "a channel created under the old name ends its redirection", setup: with(renamed, Part{Session: "s-bob", Channel: "#mid"}),
			cmd: Join{Session: "s-bob", Channel: "#old"}, want: Result{Code: OK, Member: &Member{Op: true}, Created: true}, events: []EventKind{EvJoin},
			check: func(t *testing.T, st *State, at int64) {
				if _, kept := st.redirects.Names["#old"]; kept {
					t.Error("the redirection outlived the new channel")
				}
			},
		},
		{
			name: "the channel it leads to is gone", setup: with(renamed, Part{Session: "s-bob", Channel: "#mid"}),
			cmd: Part{Session: "s-alice", Channel: "#mid"}, want: Result{Code: OK}, events: []EventKind{EvPart},
			check: func(t *testing.T, st *State, at int64) {
				want := "#mid" // an empty channel may be kept a while
				if st.channels["#mid"] == nil {
					want = ""
				}
				redirect(t, st, at, "#old", want)
			},
		},
	})
}

func TestPruneRedirectsKeepsTheNewest(t *testing.T) {
	st := &State{}
	now := int64(1_700_000_000_000)
	for i := range MaxRedirects + 5 {
		st.recordRename(fmt.Sprintf("#from%d", i), fmt.Sprintf("#to%d", i), now+int64(i))
	}
	if n := len(st.redirects.Names); n != MaxRedirects {
		t.Fatalf("%d redirections kept, want %d", n, MaxRedirects)
	}
	for i := range 5 {
		if _, kept := st.redirects.Names[fmt.Sprintf("#from%d", i)]; kept {
			t.Errorf("#from%d, among the oldest, was kept", i)
		}
	}
	st.recordRename("#late", "#later", now+RedirectTTL+MaxRedirects+10)
	if n := len(st.redirects.Names); n != 1 {
		t.Fatalf("%d redirections after a week, want only the new one", n)
	}
}
