package fsm

import (
	"slices"
	"strings"
	"testing"
)

func TestApplyRegisterSession(t *testing.T) {
	aliceGone := with(world(), EndSession{Session: "s-alice", Reason: "quit"})
	withToken := reg("s-new", "Newbie", "")
	withToken.TokenHash = "tok-new"
	operReg := reg("s-new", "boss", "")
	operReg.Oper, operReg.Secure = true, true

	invalid := func(mut func(*RegisterSession)) RegisterSession {
		r := reg("s-new", "newbie", "")
		mut(&r)
		return r
	}

	runApplyCases(t, []applyCase{
		{
			name: "guest registers", setup: world(), cmd: withToken, want: Result{Code: OK}, events: []EventKind{EvRegister},
			check: func(t *testing.T, st *State, at int64) {
				se := st.sessions["s-new"]
				if se == nil || se.Nick != "Newbie" || se.ConnectedAt != at || se.channels == nil || se.DID != "" {
					t.Fatalf("session %+v", se)
				}
				if st.nicks["newbie"] != "s-new" || st.sessionByNick("NEWBIE") != se {
					t.Errorf("nick not indexed folded: %v", st.nicks)
				}
				if st.tokens["tok-new"] != "s-new" || st.sessions[st.tokens["tok-new"]] != se {
					t.Errorf("token not indexed: %v", st.tokens)
				}
				if _, owned := st.nickOwners["newbie"]; owned {
					t.Errorf("guest claimed ownership")
				}
			},
		},
		{
			name: "fields copied", cmd: operReg, want: Result{Code: OK}, events: []EventKind{EvRegister},
			check: func(t *testing.T, st *State, _ int64) {
				se := st.sessions["s-new"]
				if !se.Oper || !se.Secure || se.Node != "node-a" || se.Incarnation != "inc-1" || se.User != "us-new" ||
					se.Host != "host-s-new" || se.Realname != "Real boss" {
					t.Errorf("session %+v", se)
				}
			},
		},
		{name: "nick in use, other case", setup: world(), cmd: reg("s-new", "ALICE", ""), want: Result{Code: ErrNickInUse}},
		{name: "nick in use by same DID", setup: world(), cmd: reg("s-new", "alice", didAlice), want: Result{Code: ErrNickInUse}},
		{
			name: "nick owned by another DID", setup: aliceGone, cmd: reg("s-new", "Alice", didBob),
			want: Result{Code: ErrNickOwned, Owner: didAlice},
			check: func(t *testing.T, st *State, _ int64) {
				if st.sessions["s-new"] != nil {
					t.Errorf("session registered despite owned nick")
				}
			},
		},
		{name: "nick owned, guest", setup: aliceGone, cmd: reg("s-new", "alice", ""), want: Result{Code: ErrNickOwned, Owner: didAlice}},
		{
			name: "nick owned by same DID", setup: aliceGone, cmd: reg("s-new", "Alice", didAlice), want: Result{Code: OK}, events: []EventKind{EvRegister},
			check: func(t *testing.T, st *State, _ int64) {
				if st.nicks["alice"] != "s-new" || st.nickOwners["alice"] != didAlice {
					t.Errorf("nicks %v owners %v", st.nicks, st.nickOwners)
				}
			},
		},
		{
			name: "ownership claimed", cmd: reg("s-new", "Carol", didCarol), want: Result{Code: OK}, events: []EventKind{EvRegister},
			check: func(t *testing.T, st *State, _ int64) {
				if st.nickOwners["carol"] != didCarol || st.didNicks[didCarol] != "carol" {
					t.Errorf("owners %v did nicks %v", st.nickOwners, st.didNicks)
				}
			},
		},
		{
			name: "a second device keeps the nick the first is using", setup: world(), cmd: reg("s-alice2", "alice_", didAlice),
			want: Result{Code: OK}, events: []EventKind{EvRegister},
			check: func(t *testing.T, st *State, _ int64) {
				if st.nickOwners["alice"] != didAlice || st.didNicks[didAlice] != "alice" {
					t.Errorf("owners %v did nicks %v", st.nickOwners, st.didNicks)
				}
				if _, ok := st.nickOwners["alice_"]; ok {
					t.Errorf("second nick claimed while the first is in use")
				}
				if st.nicks["alice"] != "s-alice" {
					t.Errorf("first session lost its nick")
				}
				if got := st.SessionsByDID(didAlice); len(got) != 2 || got[0].ID != "s-alice" || got[1].ID != "s-alice2" {
					t.Errorf("SessionsByDID = %v", got)
				}
			},
		},
		{
			name: "one nick per DID: a new nick releases an unused old one", setup: aliceGone, cmd: reg("s-alice2", "alice_", didAlice),
			want: Result{Code: OK}, events: []EventKind{EvRegister},
			check: func(t *testing.T, st *State, _ int64) {
				if st.nickOwners["alice_"] != didAlice || st.didNicks[didAlice] != "alice_" {
					t.Errorf("owners %v did nicks %v", st.nickOwners, st.didNicks)
				}
				if _, ok := st.nickOwners["alice"]; ok {
					t.Errorf("old nick still owned")
				}
			},
		},
		{name: "already registered", setup: world(), cmd: reg("s-alice", "other", ""), want: Result{Code: ErrAlreadyRegistered}},
		{name: "empty nick", cmd: reg("s-new", "", ""), want: Result{Code: ErrBadName}},
		{name: "nick too long", cmd: reg("s-new", strings.Repeat("n", MaxNickLen+1), ""), want: Result{Code: ErrBadName}},
		{name: "nick at the limit", cmd: reg("s-new", strings.Repeat("N", MaxNickLen), ""), want: Result{Code: OK}, events: []EventKind{EvRegister}},
		{name: "no id", cmd: invalid(func(r *RegisterSession) { r.ID = "" }), want: Result{Code: ErrInvalid}},
		{name: "no node", cmd: invalid(func(r *RegisterSession) { r.Node = "" }), want: Result{Code: ErrInvalid}},
		{name: "no user", cmd: invalid(func(r *RegisterSession) { r.User = "" }), want: Result{Code: ErrInvalid}},
		{name: "no host", cmd: invalid(func(r *RegisterSession) { r.Host = "" }), want: Result{Code: ErrInvalid}},
	})
}

func TestApplyChangeNick(t *testing.T) {
	inChannels := with(world(), Join{Session: "s-guest", Channel: "#b"}, Join{Session: "s-guest", Channel: "#a"})
	bobGone := with(world(), EndSession{Session: "s-bob"})
	runApplyCases(t, []applyCase{
		{
			name: "guest renames", setup: inChannels, cmd: ChangeNick{Session: "s-guest", Nick: "Visitor"},
			want: Result{Code: OK}, events: []EventKind{EvNick},
			check: func(t *testing.T, st *State, _ int64) {
				if st.nicks["visitor"] != "s-guest" || st.sessions["s-guest"].Nick != "Visitor" {
					t.Errorf("nicks %v", st.nicks)
				}
				if _, ok := st.nicks["guest"]; ok {
					t.Errorf("old nick still held")
				}
			},
		},
		{
			name: "case only", setup: world(), cmd: ChangeNick{Session: "s-guest", Nick: "GUEST"},
			want: Result{Code: OK}, events: []EventKind{EvNick},
			check: func(t *testing.T, st *State, _ int64) {
				if st.nicks["guest"] != "s-guest" || st.sessions["s-guest"].Nick != "GUEST" {
					t.Errorf("nicks %v", st.nicks)
				}
			},
		},
		{name: "same nick", setup: world(), cmd: ChangeNick{Session: "s-guest", Nick: "guest"}, want: Result{Code: NoChange}},
		{name: "in use", setup: world(), cmd: ChangeNick{Session: "s-guest", Nick: "Bob"}, want: Result{Code: ErrNickInUse}},
		{name: "owned by another DID", setup: bobGone, cmd: ChangeNick{Session: "s-guest", Nick: "BOB"}, want: Result{Code: ErrNickOwned, Owner: didBob}},
		{
			name: "owned by own DID, case change", setup: world(), cmd: ChangeNick{Session: "s-bob", Nick: "BOB"},
			want: Result{Code: OK}, events: []EventKind{EvNick},
			check: func(t *testing.T, st *State, _ int64) {
				if st.nickOwners["bob"] != didBob || st.nicks["bob"] != "s-bob" {
					t.Errorf("owners %v nicks %v", st.nickOwners, st.nicks)
				}
			},
		},
		{
			name: "authenticated rename moves ownership", setup: world(), cmd: ChangeNick{Session: "s-alice", Nick: "Alicia"},
			want: Result{Code: OK}, events: []EventKind{EvNick},
			check: func(t *testing.T, st *State, _ int64) {
				if st.nickOwners["alicia"] != didAlice || st.didNicks[didAlice] != "alicia" {
					t.Errorf("owners %v", st.nickOwners)
				}
				if _, ok := st.nickOwners["alice"]; ok {
					t.Errorf("old nick still owned")
				}
			},
		},
		{name: "no session", setup: world(), cmd: ChangeNick{Session: "s-none", Nick: "x"}, want: Result{Code: ErrNoSuchSession}},
		{name: "empty nick", setup: world(), cmd: ChangeNick{Session: "s-guest", Nick: ""}, want: Result{Code: ErrBadName}},
		{name: "too long", setup: world(), cmd: ChangeNick{Session: "s-guest", Nick: strings.Repeat("x", 65)}, want: Result{Code: ErrBadName}},
	})
}

func TestChangeNickEvent(t *testing.T) {
	h := newHarness(t)
	h.mustOK(with(world(), Join{Session: "s-guest", Channel: "#b"}, Join{Session: "s-guest", Channel: "#a"})...)
	h.takeEvents()
	h.mustOK(ChangeNick{Session: "s-guest", Nick: "Visitor"})
	evs := h.takeEvents()
	if len(evs) != 1 {
		t.Fatalf("events %v", evs)
	}
	e := evs[0]
	if e.Kind != EvNick || e.OldNick != "guest" || e.Actor.Nick != "Visitor" || e.Actor.ID != "s-guest" ||
		!slices.Equal(e.Channels, []string{"#a", "#b"}) {
		t.Errorf("event %+v", e)
	}
}

func TestApplyAuthenticate(t *testing.T) {
	inChannel := with(world(), Join{Session: "s-guest", Channel: "#g"})
	runApplyCases(t, []applyCase{
		{
			name: "guest authenticates", setup: inChannel,
			cmd:  Authenticate{Session: "s-guest", DID: didCarol, TokenHash: "tok-carol", Host: "carol.example"},
			want: Result{Code: OK}, events: []EventKind{EvAccount},
			check: func(t *testing.T, st *State, _ int64) {
				se := st.sessions["s-guest"]
				if se.DID != didCarol || se.TokenHash != "tok-carol" || se.Host != "carol.example" || se.Oper {
					t.Errorf("session %+v", se)
				}
				if st.tokens["tok-carol"] != "s-guest" {
					t.Errorf("tokens %v", st.tokens)
				}
				if st.nickOwners["guest"] != didCarol || st.didNicks[didCarol] != "guest" {
					t.Errorf("ownership not claimed: %v", st.nickOwners)
				}
			},
		},
		{
			name: "token index replaced", setup: world(),
			cmd:  Authenticate{Session: "s-alice", DID: didAlice, TokenHash: "tok-alice-2"},
			want: Result{Code: OK}, events: []EventKind{EvAccount},
			check: func(t *testing.T, st *State, _ int64) {
				if _, ok := st.tokens["tok-alice"]; ok {
					t.Errorf("old token still indexed")
				}
				if !tokenKnown(st, "tok-alice-2") || st.sessions["s-alice"].Host != "host-s-alice" {
					t.Errorf("tokens %v, host %q", st.tokens, st.sessions["s-alice"].Host)
				}
			},
		},
		{
			name: "current nick owned by another DID", setup: world(),
			cmd:  Authenticate{Session: "s-alice", DID: didCarol, TokenHash: "tok-c"},
			want: Result{Code: ErrNickOwned, Owner: didAlice}, events: []EventKind{EvAccount},
			check: func(t *testing.T, st *State, _ int64) {
				// The DID is bound; the proposer renames the session next. Ownership stays.
				if st.sessions["s-alice"].DID != didCarol || st.tokens["tok-c"] != "s-alice" {
					t.Errorf("session %+v", st.sessions["s-alice"])
				}
				if st.nickOwners["alice"] != didAlice {
					t.Errorf("ownership moved: %v", st.nickOwners)
				}
				if _, ok := st.didNicks[didCarol]; ok {
					t.Errorf("carol claimed a nick: %v", st.didNicks)
				}
			},
		},
		{
			name: "oper flag", setup: world(),
			cmd:  Authenticate{Session: "s-guest", DID: didCarol, TokenHash: "t", Oper: true},
			want: Result{Code: OK}, events: []EventKind{EvAccount},
			check: func(t *testing.T, st *State, _ int64) {
				if !st.sessions["s-guest"].Oper {
					t.Errorf("not oper")
				}
			},
		},
		{name: "no session", setup: world(), cmd: Authenticate{Session: "s-x", DID: didCarol, TokenHash: "t"}, want: Result{Code: ErrNoSuchSession}},
		{name: "no DID", setup: world(), cmd: Authenticate{Session: "s-guest", TokenHash: "t"}, want: Result{Code: ErrInvalid}},
		{name: "no token", setup: world(), cmd: Authenticate{Session: "s-guest", DID: didCarol}, want: Result{Code: ErrInvalid}},
	})
}

func TestApplyEndSession(t *testing.T) {
	setup := with(world(),
		Join{Session: "s-alice", Channel: "#founded"},
		Join{Session: "s-guest", Channel: "#founded"},
		Join{Session: "s-guest", Channel: "#guests"},
		Join{Session: "s-guest", Channel: "#topic"},
		Topic{Session: "s-guest", Channel: "#topic", Text: "kept"},
	)
	runApplyCases(t, []applyCase{
		{
			name: "guest quits", setup: setup, cmd: EndSession{Session: "s-guest", Reason: "bye"},
			want: Result{Code: OK}, events: []EventKind{EvQuit},
			check: func(t *testing.T, st *State, _ int64) {
				if st.sessions["s-guest"] != nil || st.sessionByNick("guest") != nil {
					t.Errorf("session remains")
				}
				if st.channels["#guests"] != nil {
					t.Errorf("empty guest channel kept")
				}
				if c := st.channels["#topic"]; c == nil || len(c.members) != 0 {
					t.Errorf("channel with a topic not kept empty: %+v", c)
				}
				if c := st.channels["#founded"]; c == nil || len(c.members) != 1 || c.members["s-alice"] == nil {
					t.Errorf("#founded %+v", c)
				}
			},
		},
		{
			name: "founder quits", setup: setup, cmd: EndSession{Session: "s-alice"},
			want: Result{Code: OK}, events: []EventKind{EvQuit},
			check: func(t *testing.T, st *State, _ int64) {
				if _, ok := st.tokens["tok-alice"]; ok {
					t.Errorf("token kept after the session ended")
				}
				if st.nickOwners["alice"] != didAlice {
					t.Errorf("ownership lost on quit")
				}
				if c := st.channels["#founded"]; c == nil || c.FounderDID != didAlice || c.members["s-alice"] != nil {
					t.Errorf("#founded %+v", c)
				}
			},
		},
		{
			name: "founder channel kept when empty", setup: with(world(), Join{Session: "s-alice", Channel: "#mine"}),
			cmd: EndSession{Session: "s-alice"}, want: Result{Code: OK}, events: []EventKind{EvQuit},
			check: func(t *testing.T, st *State, _ int64) {
				if c := st.channels["#mine"]; c == nil || len(c.members) != 0 || c.FounderDID != didAlice {
					t.Errorf("#mine %+v", c)
				}
			},
		},
		{name: "no session", setup: world(), cmd: EndSession{Session: "s-x"}, want: Result{Code: ErrNoSuchSession}},
	})
}

func TestEndSessionEvent(t *testing.T) {
	h := newHarness(t)
	h.mustOK(with(world(), Join{Session: "s-guest", Channel: "#z"}, Join{Session: "s-guest", Channel: "#a"})...)
	h.takeEvents()
	h.mustOK(EndSession{Session: "s-guest", Reason: "Ping timeout"})
	evs := h.takeEvents()
	if len(evs) != 1 || evs[0].Kind != EvQuit || evs[0].Text != "Ping timeout" || evs[0].Actor.Nick != "guest" ||
		!slices.Equal(evs[0].Channels, []string{"#a", "#z"}) {
		t.Errorf("events %+v", evs)
	}
}

func TestApplyPurgeNode(t *testing.T) {
	sess := func(id, node, inc string) RegisterSession {
		r := reg(id, id, "")
		r.Node, r.Incarnation = node, inc
		return r
	}
	setup := []Command{
		sess("s1", "node-a", "old"), sess("s2", "node-a", "old"), sess("s3", "node-a", "new"), sess("s4", "node-b", "old"),
		Join{Session: "s1", Channel: "#c"}, Join{Session: "s3", Channel: "#c"},
	}
	alive := func(want ...string) func(*testing.T, *State, int64) {
		return func(t *testing.T, st *State, _ int64) {
			var got []string
			for id := range st.sessions {
				got = append(got, id)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("sessions %v, want %v", got, want)
			}
		}
	}
	runApplyCases(t, []applyCase{
		{
			name: "restart keeps the new incarnation", setup: setup, cmd: PurgeNode{Node: "node-a", Keep: "new", Reason: "restart"},
			want: Result{Code: OK, Count: 2}, events: []EventKind{EvQuit, EvQuit}, check: alive("s3", "s4"),
		},
		{
			name: "node left", setup: setup, cmd: PurgeNode{Node: "node-a", Reason: "gone"},
			want: Result{Code: OK, Count: 3}, events: []EventKind{EvQuit, EvQuit, EvQuit}, check: alive("s4"),
		},
		{name: "unknown node", setup: setup, cmd: PurgeNode{Node: "node-z"}, want: Result{Code: OK}, check: alive("s1", "s2", "s3", "s4")},
		{name: "no node", setup: setup, cmd: PurgeNode{Keep: "new"}, want: Result{Code: ErrInvalid}, check: alive("s1", "s2", "s3", "s4")},
	})
}

func TestPurgeNodeEventOrder(t *testing.T) {
	h := newHarness(t)
	for _, id := range []string{"s9", "s1", "s5"} {
		h.mustOK(reg(id, "n"+id, ""))
	}
	h.takeEvents()
	if r := h.apply(PurgeNode{Node: "node-a", Reason: "netsplit"}); r.Code != OK || r.Count != 3 {
		t.Fatalf("result %+v", r)
	}
	var ids []string
	for _, e := range h.takeEvents() {
		if e.Kind != EvQuit || e.Text != "netsplit" {
			t.Errorf("event %+v", e)
		}
		ids = append(ids, e.Actor.ID)
	}
	if !slices.Equal(ids, []string{"s1", "s5", "s9"}) {
		t.Errorf("quit order %v, want sorted ids", ids)
	}
}

func TestApplyAway(t *testing.T) {
	away := with(world(), Away{Session: "s-bob", Text: "lunch"})
	runApplyCases(t, []applyCase{
		{
			name: "set", setup: world(), cmd: Away{Session: "s-bob", Text: "lunch"}, want: Result{Code: OK}, events: []EventKind{EvAway},
			check: func(t *testing.T, st *State, _ int64) {
				if st.sessions["s-bob"].Away != "lunch" {
					t.Errorf("away %q", st.sessions["s-bob"].Away)
				}
			},
		},
		{name: "same text", setup: away, cmd: Away{Session: "s-bob", Text: "lunch"}, want: Result{Code: NoChange}},
		{name: "change text", setup: away, cmd: Away{Session: "s-bob", Text: "dinner"}, want: Result{Code: OK}, events: []EventKind{EvAway}},
		{
			name: "clear", setup: away, cmd: Away{Session: "s-bob"}, want: Result{Code: OK}, events: []EventKind{EvAway},
			check: func(t *testing.T, st *State, _ int64) {
				if st.sessions["s-bob"].Away != "" {
					t.Errorf("away not cleared")
				}
			},
		},
		{name: "clear when not away", setup: world(), cmd: Away{Session: "s-bob"}, want: Result{Code: NoChange}},
		{name: "no session", setup: world(), cmd: Away{Session: "s-x", Text: "x"}, want: Result{Code: ErrNoSuchSession}},
	})
}

func TestApplyOper(t *testing.T) {
	runApplyCases(t, []applyCase{
		{
			name: "becomes oper", setup: world(), cmd: Oper{Session: "s-guest"}, want: Result{Code: OK}, events: []EventKind{EvOper},
			check: func(t *testing.T, st *State, _ int64) {
				if !st.sessions["s-guest"].Oper {
					t.Errorf("not oper")
				}
			},
		},
		{name: "already oper", setup: world(), cmd: Oper{Session: "s-oper"}, want: Result{Code: NoChange}},
		{name: "no session", setup: world(), cmd: Oper{Session: "s-x"}, want: Result{Code: ErrNoSuchSession}},
	})
}

func TestApplySetFavorites(t *testing.T) {
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "#c" + strings.Repeat("x", i%5)
		}
		return out
	}
	stored := func(want []string) func(*testing.T, *State, int64) {
		return func(t *testing.T, st *State, _ int64) {
			got, ok := st.favorites[didAlice]
			if (want == nil) == ok || !slices.Equal(got, want) {
				t.Errorf("favorites %v (present %v), want %v", got, ok, want)
			}
		}
	}
	set := SetFavorites{DID: didAlice, Favorites: []string{"#b", "#a"}}
	runApplyCases(t, []applyCase{
		{name: "set keeps order", cmd: set, want: Result{Code: OK, List: []string{"#b", "#a"}}, check: stored([]string{"#b", "#a"})},
		{
			name: "replace", setup: []Command{set}, cmd: SetFavorites{DID: didAlice, Favorites: []string{"#z"}},
			want: Result{Code: OK, List: []string{"#z"}}, check: stored([]string{"#z"}),
		},
		{name: "clear", setup: []Command{set}, cmd: SetFavorites{DID: didAlice}, want: Result{Code: OK}, check: stored(nil)},
		{name: "at the limit", cmd: SetFavorites{DID: didAlice, Favorites: many(MaxFavorites)}, want: Result{Code: OK, List: many(MaxFavorites)}},
		{name: "too many", setup: []Command{set}, cmd: SetFavorites{DID: didAlice, Favorites: many(MaxFavorites + 1)}, want: Result{Code: ErrInvalid}, check: stored([]string{"#b", "#a"})},
		{name: "no DID", cmd: SetFavorites{Favorites: []string{"#a"}}, want: Result{Code: ErrInvalid}},
	})
}

// tokenKnown reports whether a bearer token hash names a live session.
func tokenKnown(st *State, hash string) bool {
	_, ok := st.SessionByToken(hash)
	return ok
}
