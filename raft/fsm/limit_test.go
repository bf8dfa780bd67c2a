package fsm

import "testing"

// TestChannelLimitAndSecret covers +l (a member limit, 471 on JOIN) and +s (secret channels).
func TestChannelLimitAndSecret(t *testing.T) {
	// alice founds #c, bob joins; the limit is then set to the two of them.
	full := with(world(), Join{Session: "s-alice", Channel: "#c"}, Join{Session: "s-bob", Channel: "#c"},
		modes("s-alice", "#c", add("l", "2")))
	cases := []applyCase{
		{name: "+l sets the limit", setup: with(world(), Join{Session: "s-alice", Channel: "#c"}), cmd: modes("s-alice", "#c", add("l", "5")),
			want: Result{Code: OK, Applied: []ModeChange{add("l", "5")}}, events: []EventKind{EvMode},
			check: func(t *testing.T, st *State, _ int64) {
				if ch := st.channels["#c"]; ch.Limit != 5 || ch.ModeString() != "+ntl" {
					t.Fatalf("limit %d, modes %s", ch.Limit, ch.ModeString())
				}
			}},
		{name: "a full channel refuses a join", setup: full, cmd: Join{Session: "s-guest", Channel: "#c"}, want: Result{Code: ErrChannelFull}},
		{name: "an invited user joins a full channel", setup: with(full, Invite{Session: "s-alice", Channel: "#c", Target: "s-guest"}),
			cmd: Join{Session: "s-guest", Channel: "#c"}, want: Result{Code: OK, Member: &Member{}}, events: []EventKind{EvJoin}},
		{name: "an operator joins a full channel", setup: full, cmd: Join{Session: "s-oper", Channel: "#c"},
			want: Result{Code: OK, Member: &Member{}}, events: []EventKind{EvJoin}},
		{name: "-l lifts it", setup: full, cmd: modes("s-alice", "#c", del("l", "")),
			want: Result{Code: OK, Applied: []ModeChange{del("l", "")}}, events: []EventKind{EvMode}},
		{name: "the same limit changes nothing", setup: full, cmd: modes("s-alice", "#c", add("l", "2")), want: Result{Code: NoChange}},
		{name: "invalid limits", setup: full, cmd: modes("s-alice", "#c", add("l", "0"), add("l", "-3"), add("l", "ten"), add("l", "")),
			want: Result{Code: ErrInvalid, Failed: []ModeFailure{{Change: add("l", "0"), Code: ErrInvalid}, {Change: add("l", "-3"), Code: ErrInvalid},
				{Change: add("l", "ten"), Code: ErrInvalid}, {Change: add("l", ""), Code: ErrInvalid}}}},
		{name: "only operators set +l", setup: full, cmd: modes("s-bob", "#c", add("l", "9")),
			want: Result{Code: ErrChanOpNeeded, Failed: []ModeFailure{{Change: add("l", "9"), Code: ErrChanOpNeeded}}}},
		{name: "+C is a flag", setup: full, cmd: modes("s-alice", "#c", add("C", "")),
			want: Result{Code: OK, Applied: []ModeChange{add("C", "")}}, events: []EventKind{EvMode},
			check: func(t *testing.T, st *State, _ int64) {
				if ch := st.channels["#c"]; !ch.NoCTCP || ch.ModeString() != "+ntCl" {
					t.Fatalf("+C: %v %s", ch.NoCTCP, ch.ModeString())
				}
			}},
		{name: "+s hides the channel", setup: full, cmd: modes("s-alice", "#c", add("s", "")),
			want: Result{Code: OK, Applied: []ModeChange{add("s", "")}}, events: []EventKind{EvMode},
			check: func(t *testing.T, st *State, _ int64) {
				ch := st.channels["#c"]
				if ch.Discoverable() || ch.CanRead("s-guest", "") || !ch.CanRead("s-bob", didBob) {
					t.Fatalf("a secret channel: discoverable %v", ch.Discoverable())
				}
			}},
	}
	runApplyCases(t, cases)
}

func TestChannelLimitIsNormalized(t *testing.T) {
	h := newHarness(t)
	h.mustOK(with(world(), Join{Session: "s-alice", Channel: "#c"})...)
	if res := h.apply(modes("s-alice", "#c", add("l", "007"))); res.Code != OK || len(res.Applied) != 1 || res.Applied[0].Arg != "7" {
		t.Fatalf("+l 007 = %+v", res)
	}
}
