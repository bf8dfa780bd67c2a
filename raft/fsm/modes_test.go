package fsm

import (
	"fmt"
	"strings"
	"testing"
)

func chanCheck(f func(t *testing.T, c *Channel)) func(*testing.T, *State, int64) {
	return func(t *testing.T, st *State, _ int64) {
		c := st.channels["#c"]
		if c == nil {
			t.Fatalf("#c missing")
		}
		f(t, c)
	}
}

func fullBanList(n int) []ModeChange {
	out := make([]ModeChange, n)
	for i := range out {
		out[i] = add("b", fmt.Sprintf("n%d!*@*", i))
	}
	return out
}

func TestApplyModeFlags(t *testing.T) {
	var cases []applyCase
	for _, letter := range []string{"i", "m", "E"} {
		cases = append(cases,
			applyCase{
				name: "+" + letter, setup: channelWorld(), cmd: modes("s-alice", "#c", ModeChange{Add: true, Mode: letter, Arg: "junk", Target: "junk"}),
				want: Result{Code: OK, Applied: []ModeChange{{Add: true, Mode: letter}}}, events: []EventKind{EvMode},
				check: chanCheck(func(t *testing.T, c *Channel) {
					if !strings.Contains(c.ModeString(), letter) {
						t.Errorf("modes %s", c.ModeString())
					}
				}),
			},
			applyCase{
				name: "-" + letter + " when unset", setup: channelWorld(), cmd: modes("s-alice", "#c", del(letter, "")),
				want: Result{Code: NoChange},
			},
			applyCase{
				name: "-" + letter, setup: with(channelWorld(), modes("s-alice", "#c", add(letter, ""))), cmd: modes("s-alice", "#c", del(letter, "")),
				want: Result{Code: OK, Applied: []ModeChange{{Mode: letter}}}, events: []EventKind{EvMode},
				check: chanCheck(func(t *testing.T, c *Channel) {
					if c.ModeString() != "+nt" {
						t.Errorf("modes %s", c.ModeString())
					}
				}),
			},
		)
	}
	for _, letter := range []string{"n", "t"} {
		cases = append(cases,
			applyCase{name: "+" + letter + " already set", setup: channelWorld(), cmd: modes("s-alice", "#c", add(letter, "")), want: Result{Code: NoChange}},
			applyCase{
				name: "-" + letter, setup: channelWorld(), cmd: modes("s-alice", "#c", del(letter, "")),
				want: Result{Code: OK, Applied: []ModeChange{{Mode: letter}}}, events: []EventKind{EvMode},
				check: chanCheck(func(t *testing.T, c *Channel) {
					if strings.Contains(c.ModeString(), letter) {
						t.Errorf("modes %s", c.ModeString())
					}
				}),
			},
		)
	}
	cases = append(cases, applyCase{
		name: "all flags at once", setup: channelWorld(),
		cmd: modes("s-alice", "#c", add("i", ""), add("m", ""), add("E", ""), add("k", "key"), del("n", ""), del("t", "")),
		want: Result{Code: OK, Applied: []ModeChange{{Add: true, Mode: "i"}, {Add: true, Mode: "m"}, {Add: true, Mode: "E"},
			{Add: true, Mode: "k", Arg: "key"}, {Mode: "n"}, {Mode: "t"}}},
		events: []EventKind{EvMode},
		check: chanCheck(func(t *testing.T, c *Channel) {
			if c.ModeString() != "+imEk" || c.Discoverable() {
				t.Errorf("modes %s discoverable %v", c.ModeString(), c.Discoverable())
			}
		}),
	})
	runApplyCases(t, cases)
}

func TestApplyModeKey(t *testing.T) {
	keyed := with(channelWorld(), modes("s-alice", "#c", add("k", "old")))
	key := func(want string) func(*testing.T, *State, int64) {
		return chanCheck(func(t *testing.T, c *Channel) {
			if c.Key != want {
				t.Errorf("key %q, want %q", c.Key, want)
			}
		})
	}
	runApplyCases(t, []applyCase{
		{name: "+k", setup: channelWorld(), cmd: modes("s-alice", "#c", add("k", " sekrit ")), want: Result{Code: OK, Applied: []ModeChange{add("k", "sekrit")}}, events: []EventKind{EvMode}, check: key("sekrit")},
		{name: "+k same key", setup: keyed, cmd: modes("s-alice", "#c", add("k", "old")), want: Result{Code: NoChange}, check: key("old")},
		{name: "+k replaces", setup: keyed, cmd: modes("s-alice", "#c", add("k", "new")), want: Result{Code: OK, Applied: []ModeChange{add("k", "new")}}, events: []EventKind{EvMode}, check: key("new")},
		{name: "-k without argument", setup: keyed, cmd: modes("s-alice", "#c", del("k", "")), want: Result{Code: OK, Applied: []ModeChange{del("k", "")}}, events: []EventKind{EvMode}, check: key("")},
		{name: "-k with a wrong argument", setup: keyed, cmd: modes("s-alice", "#c", del("k", "whatever")), want: Result{Code: OK, Applied: []ModeChange{del("k", "")}}, events: []EventKind{EvMode}, check: key("")},
		{name: "-k without a key", setup: channelWorld(), cmd: modes("s-alice", "#c", del("k", "")), want: Result{Code: NoChange}},
		{name: "+k empty", setup: keyed, cmd: modes("s-alice", "#c", add("k", "  ")), want: Result{Code: ErrInvalid, Failed: []ModeFailure{{Change: add("k", "  "), Code: ErrInvalid}}}, check: key("old")},
		{name: "+k with a space", setup: channelWorld(), cmd: modes("s-alice", "#c", add("k", "a b")), want: Result{Code: ErrInvalid, Failed: []ModeFailure{{Change: add("k", "a b"), Code: ErrInvalid}}}, check: key("")},
		{name: "+k with a comma", setup: channelWorld(), cmd: modes("s-alice", "#c", add("k", "a,b")), want: Result{Code: ErrInvalid, Failed: []ModeFailure{{Change: add("k", "a,b"), Code: ErrInvalid}}}},
		{name: "+k too long", setup: channelWorld(), cmd: modes("s-alice", "#c", add("k", strings.Repeat("k", 65))), want: Result{Code: ErrInvalid, Failed: []ModeFailure{{Change: add("k", strings.Repeat("k", 65)), Code: ErrInvalid}}}},
		{name: "+k at the limit", setup: channelWorld(), cmd: modes("s-alice", "#c", add("k", strings.Repeat("k", 64))), want: Result{Code: OK, Applied: []ModeChange{add("k", strings.Repeat("k", 64))}}, events: []EventKind{EvMode}},
		{name: "-k by a member", setup: keyed, cmd: modes("s-bob", "#c", del("k", "")), want: Result{Code: ErrChanOpNeeded, Failed: []ModeFailure{{Change: del("k", ""), Code: ErrChanOpNeeded}}}, check: key("old")},
	})
}

func TestApplyModePrefixes(t *testing.T) {
	memberIs := func(id string, want Member, didOp bool) func(*testing.T, *State, int64) {
		return func(t *testing.T, st *State, _ int64) {
			c := st.channels["#c"]
			m := c.members[id]
			if m == nil || m.Op != want.Op || m.HalfOp != want.HalfOp || m.Voice != want.Voice {
				t.Errorf("%s is %+v, want %+v", id, m, want)
			}
			if did := st.sessions[id].DID; did != "" && c.didOps[did] != didOp {
				t.Errorf("DID op of %s: %v, want %v", did, c.didOps[did], didOp)
			}
		}
	}
	applied := func(mc ModeChange, nick string) []ModeChange {
		mc.Arg = nick
		return []ModeChange{mc}
	}
	bobOp := with(channelWorld(), modes("s-alice", "#c", addTo("o", "s-bob")))
	runApplyCases(t, []applyCase{
		{
			name: "+o authenticated adds a DID op", setup: channelWorld(), cmd: modes("s-alice", "#c", addTo("o", "s-bob")),
			want: Result{Code: OK, Applied: applied(addTo("o", "s-bob"), "bob")}, events: []EventKind{EvMode},
			check: memberIs("s-bob", Member{Op: true}, true),
		},
		{
			name: "+o guest adds no DID op", setup: channelWorld(), cmd: modes("s-alice", "#c", addTo("o", "s-guest")),
			want: Result{Code: OK, Applied: applied(addTo("o", "s-guest"), "guest")}, events: []EventKind{EvMode},
			check: func(t *testing.T, st *State, _ int64) {
				if !st.channels["#c"].members["s-guest"].Op || len(st.channels["#c"].didOps) != 0 {
					t.Errorf("channel %+v", st.channels["#c"])
				}
			},
		},
		{name: "+o already op and DID op", setup: bobOp, cmd: modes("s-alice", "#c", addTo("o", "s-bob")), want: Result{Code: NoChange}},
		{
			name: "-o removes the DID op", setup: bobOp, cmd: modes("s-alice", "#c", delTo("o", "s-bob")),
			want: Result{Code: OK, Applied: applied(delTo("o", "s-bob"), "bob")}, events: []EventKind{EvMode},
			check: memberIs("s-bob", Member{}, false),
		},
		{
			name: "founder de-op ignored", setup: bobOp, cmd: modes("s-bob", "#c", delTo("o", "s-alice")),
			want: Result{Code: NoChange}, check: memberIs("s-alice", Member{Op: true}, false),
		},
		{
			name: "founder de-op ignored for a server operator", setup: channelWorld(), cmd: modes("s-oper", "#c", delTo("o", "s-alice"), addTo("v", "s-alice")),
			want: Result{Code: OK, Applied: applied(addTo("v", "s-alice"), "alice")}, events: []EventKind{EvMode},
			check: memberIs("s-alice", Member{Op: true, Voice: true}, false),
		},
		{
			name: "+h", setup: channelWorld(), cmd: modes("s-alice", "#c", addTo("h", "s-bob")),
			want: Result{Code: OK, Applied: applied(addTo("h", "s-bob"), "bob")}, events: []EventKind{EvMode},
			check: memberIs("s-bob", Member{HalfOp: true}, false),
		},
		{
			name: "+v", setup: channelWorld(), cmd: modes("s-alice", "#c", addTo("v", "s-guest")),
			want: Result{Code: OK, Applied: applied(addTo("v", "s-guest"), "guest")}, events: []EventKind{EvMode},
			check: memberIs("s-guest", Member{Voice: true}, false),
		},
		{
			name: "-v", setup: with(channelWorld(), modes("s-alice", "#c", addTo("v", "s-guest"))), cmd: modes("s-alice", "#c", delTo("v", "s-guest")),
			want: Result{Code: OK, Applied: applied(delTo("v", "s-guest"), "guest")}, events: []EventKind{EvMode},
			check: memberIs("s-guest", Member{}, false),
		},
		{name: "+v already voiced", setup: with(channelWorld(), modes("s-alice", "#c", addTo("v", "s-guest"))), cmd: modes("s-alice", "#c", addTo("v", "s-guest")), want: Result{Code: NoChange}},
		{
			name: "target not on channel", setup: aliceOnly(), cmd: modes("s-alice", "#c", addTo("o", "s-bob")),
			want: Result{Code: ErrUserNotInChannel, Failed: []ModeFailure{{Change: addTo("o", "s-bob"), Code: ErrUserNotInChannel}}},
		},
		{
			name: "target gone", setup: aliceOnly(), cmd: modes("s-alice", "#c", addTo("v", "s-x")),
			want: Result{Code: ErrUserNotInChannel, Failed: []ModeFailure{{Change: addTo("v", "s-x"), Code: ErrUserNotInChannel}}},
		},
	})
}

func TestDIDOpPersistsAcrossSessions(t *testing.T) {
	h := newHarness(t)
	h.mustOK(with(channelWorld(), modes("s-alice", "#c", addTo("o", "s-bob")), EndSession{Session: "s-bob"},
		reg("s-bob-phone", "bob", didBob))...)
	r := h.apply(Join{Session: "s-bob-phone", Channel: "#c"})
	if r.Code != OK || r.Member == nil || !r.Member.Op {
		t.Fatalf("rejoin after reconnect: %+v", r)
	}
	h.mustOK(modes("s-alice", "#c", delTo("o", "s-bob-phone")), Part{Session: "s-bob-phone", Channel: "#c"})
	if r := h.apply(Join{Session: "s-bob-phone", Channel: "#c"}); r.Member == nil || r.Member.Op {
		t.Errorf("de-opped DID still auto-opped: %+v", r)
	}
}

func TestApplyModeLists(t *testing.T) {
	banned := with(channelWorld(), modes("s-alice", "#c", add("b", "Spam!*@*"), add("b", didBob)))
	full := with(channelWorld(), modes("s-alice", "#c", fullBanList(MaxListEntries)...))
	list := func(letter string, want ...string) func(*testing.T, *State, int64) {
		return chanCheck(func(t *testing.T, c *Channel) {
			l := c.Bans
			if letter == "I" {
				l = c.Exceptions
			}
			var got []string
			for _, e := range l {
				got = append(got, e.Mask)
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("+%s list %v, want %v", letter, got, want)
			}
		})
	}
	runApplyCases(t, []applyCase{
		{
			name: "+b stamps setter and time", setup: channelWorld(), cmd: modes("s-alice", "#c", add("b", "  *!*@evil  ")),
			want: Result{Code: OK, Applied: []ModeChange{add("b", "*!*@evil")}}, events: []EventKind{EvMode},
			check: func(t *testing.T, st *State, at int64) {
				b := st.channels["#c"].Bans
				if len(b) != 1 || b[0].Mask != "*!*@evil" || b[0].SetBy != "alice!us-alice@host-s-alice" || b[0].SetAt != at {
					t.Errorf("bans %+v", b)
				}
			},
		},
		{name: "+b duplicate in another case", setup: banned, cmd: modes("s-alice", "#c", add("b", "SPAM!*@*")), want: Result{Code: NoChange}, check: list("b", "Spam!*@*", didBob)},
		{name: "-b in another case", setup: banned, cmd: modes("s-alice", "#c", del("b", "spam!*@*")), want: Result{Code: OK, Applied: []ModeChange{del("b", "spam!*@*")}}, events: []EventKind{EvMode}, check: list("b", didBob)},
		{name: "-b missing", setup: banned, cmd: modes("s-alice", "#c", del("b", "nope!*@*")), want: Result{Code: NoChange}, check: list("b", "Spam!*@*", didBob)},
		{name: "DID masks are exact", setup: banned, cmd: modes("s-alice", "#c", add("b", "did:plc:BOB")), want: Result{Code: OK, Applied: []ModeChange{add("b", "did:plc:BOB")}}, events: []EventKind{EvMode}, check: list("b", "Spam!*@*", didBob, "did:plc:BOB")},
		{name: "-b DID in another case", setup: banned, cmd: modes("s-alice", "#c", del("b", "DID:plc:bob")), want: Result{Code: NoChange}},
		{name: "-b DID", setup: banned, cmd: modes("s-alice", "#c", del("b", didBob)), want: Result{Code: OK, Applied: []ModeChange{del("b", didBob)}}, events: []EventKind{EvMode}, check: list("b", "Spam!*@*")},
		{name: "whitespace mask ignored", setup: channelWorld(), cmd: modes("s-alice", "#c", add("b", " \t "), add("I", "")), want: Result{Code: NoChange}, check: list("b")},
		{name: "+I", setup: channelWorld(), cmd: modes("s-alice", "#c", add("I", didCarol)), want: Result{Code: OK, Applied: []ModeChange{add("I", didCarol)}}, events: []EventKind{EvMode}, check: list("I", didCarol)},
		{name: "-I", setup: with(channelWorld(), modes("s-alice", "#c", add("I", "a!*@*"), add("I", "b!*@*"))), cmd: modes("s-alice", "#c", del("I", "A!*@*")), want: Result{Code: OK, Applied: []ModeChange{del("I", "A!*@*")}}, events: []EventKind{EvMode}, check: list("I", "b!*@*")},
		{
			name: "ban list full", setup: full, cmd: modes("s-alice", "#c", add("b", "one-more!*@*")),
			want:  Result{Code: ErrListFull, Failed: []ModeFailure{{Change: add("b", "one-more!*@*"), Code: ErrListFull}}},
			check: chanCheck(func(t *testing.T, c *Channel) { checkLen(t, c.Bans, MaxListEntries) }),
		},
		{
			name: "full list still takes removals and duplicates", setup: full,
			cmd:    modes("s-alice", "#c", add("b", "n0!*@*"), del("b", "n1!*@*"), add("b", "new!*@*"), add("b", "newer!*@*")),
			want:   Result{Code: OK, Applied: []ModeChange{del("b", "n1!*@*"), add("b", "new!*@*")}, Failed: []ModeFailure{{Change: add("b", "newer!*@*"), Code: ErrListFull}}},
			events: []EventKind{EvMode},
			check:  chanCheck(func(t *testing.T, c *Channel) { checkLen(t, c.Bans, MaxListEntries) }),
		},
		{
			name: "exception list is separate", setup: full, cmd: modes("s-alice", "#c", add("I", "x!*@*")),
			want: Result{Code: OK, Applied: []ModeChange{add("I", "x!*@*")}}, events: []EventKind{EvMode},
		},
	})
}

func checkLen(t *testing.T, l []ListEntry, want int) {
	t.Helper()
	if len(l) != want {
		t.Errorf("list has %d entries, want %d", len(l), want)
	}
}

func TestApplyModePrivileges(t *testing.T) {
	halfop := with(channelWorld(), modes("s-alice", "#c", addTo("h", "s-bob")))
	opNeeded := func(mc ModeChange) []ModeFailure { return []ModeFailure{{Change: mc, Code: ErrChanOpNeeded}} }
	var cases []applyCase
	for _, mc := range []ModeChange{addTo("o", "s-guest"), addTo("h", "s-guest"), add("b", "x!*@*"), add("I", "x!*@*"),
		add("i", ""), del("t", ""), del("n", ""), add("m", ""), add("E", ""), add("k", "k"), delTo("h", "s-bob")} {
		sign := "-"
		if mc.Add {
			sign = "+"
		}
		cases = append(cases,
			applyCase{name: "halfop " + sign + mc.Mode, setup: halfop, cmd: modes("s-bob", "#c", mc), want: Result{Code: ErrChanOpNeeded, Failed: opNeeded(mc)}},
			applyCase{name: "member " + sign + mc.Mode, setup: channelWorld(), cmd: modes("s-guest", "#c", mc), want: Result{Code: ErrChanOpNeeded, Failed: opNeeded(mc)}},
		)
	}
	cases = append(cases,
		applyCase{
			name: "halfop ±v", setup: with(halfop, modes("s-alice", "#c", addTo("v", "s-alice"))),
			cmd:    modes("s-bob", "#c", addTo("v", "s-guest"), delTo("v", "s-alice")),
			want:   Result{Code: OK, Applied: []ModeChange{{Add: true, Mode: "v", Arg: "guest", Target: "s-guest"}, {Mode: "v", Arg: "alice", Target: "s-alice"}}},
			events: []EventKind{EvMode},
		},
		applyCase{name: "member +v", setup: channelWorld(), cmd: modes("s-guest", "#c", addTo("v", "s-guest")), want: Result{Code: ErrChanOpNeeded, Failed: opNeeded(addTo("v", "s-guest"))}},
		applyCase{
			name:  "halfop mixed: permitted part applied, one 482",
			setup: halfop, cmd: modes("s-bob", "#c", add("i", ""), addTo("v", "s-guest"), add("b", "x!*@*"), addTo("o", "s-guest")),
			want:   Result{Code: OK, Applied: []ModeChange{{Add: true, Mode: "v", Arg: "guest", Target: "s-guest"}}, Failed: opNeeded(add("i", ""))},
			events: []EventKind{EvMode},
			check: chanCheck(func(t *testing.T, c *Channel) {
				if c.InviteOnly || len(c.Bans) != 0 || c.members["s-guest"].Op || !c.members["s-guest"].Voice {
					t.Errorf("channel %+v", c)
				}
			}),
		},
		applyCase{
			name: "not a member", setup: aliceOnly(), cmd: modes("s-bob", "#c", add("i", "")),
			want: Result{Code: ErrChanOpNeeded, Failed: opNeeded(add("i", ""))},
		},
		applyCase{
			name: "server operator from outside", setup: aliceOnly(), cmd: modes("s-oper", "#c", add("i", ""), add("b", "x!*@*")),
			want: Result{Code: OK, Applied: []ModeChange{{Add: true, Mode: "i"}, add("b", "x!*@*")}}, events: []EventKind{EvMode},
			check: func(t *testing.T, st *State, _ int64) {
				if st.channels["#c"].Bans[0].SetBy != "oper!us-oper@host-s-oper" {
					t.Errorf("bans %+v", st.channels["#c"].Bans)
				}
			},
		},
		applyCase{
			name: "founder without op", setup: with(world(), reg("s-carol", "carol", didCarol), Join{Session: "s-carol", Channel: "#c"},
				EndSession{Session: "s-carol"}, Join{Session: "s-guest", Channel: "#c"}, Authenticate{Session: "s-guest", DID: didCarol, TokenHash: "t"}),
			cmd:  modes("s-guest", "#c", add("m", "")),
			want: Result{Code: OK, Applied: []ModeChange{{Add: true, Mode: "m"}}}, events: []EventKind{EvMode},
		},
		applyCase{
			name: "unknown letters", setup: channelWorld(), cmd: modes("s-alice", "#c", add("p", ""), add("", ""), add("ov", "")),
			want: Result{Code: ErrInvalid, Failed: []ModeFailure{{Change: add("p", ""), Code: ErrInvalid},
				{Change: add("", ""), Code: ErrInvalid}, {Change: add("ov", ""), Code: ErrInvalid}}},
		},
		applyCase{name: "no changes", setup: channelWorld(), cmd: modes("s-alice", "#c"), want: Result{Code: NoChange}},
		applyCase{name: "no channel", setup: world(), cmd: modes("s-alice", "#none", add("i", "")), want: Result{Code: ErrNoSuchChannel}},
		applyCase{name: "no session", setup: channelWorld(), cmd: modes("s-x", "#c", add("i", "")), want: Result{Code: ErrNoSuchSession}},
	)
	runApplyCases(t, cases)
}

func TestModeEvent(t *testing.T) {
	h := newHarness(t)
	h.mustOK(channelWorld()...)
	h.takeEvents()
	r := h.apply(modes("s-alice", "#c", add("i", ""), addTo("v", "s-guest"), add("q", "")))
	evs := h.takeEvents()
	if len(evs) != 1 || evs[0].Kind != EvMode || evs[0].Channel != "#c" || evs[0].Actor.ID != "s-alice" ||
		!sameJSON(t, evs[0].Modes, r.Applied) || len(r.Applied) != 2 {
		t.Errorf("events %+v for result %+v", evs, r)
	}
}
