package fsm

import (
	"fmt"
	"strings"
	"testing"
)

func add(mode, arg string) ModeChange      { return ModeChange{Add: true, Mode: mode, Arg: arg} }
func del(mode, arg string) ModeChange      { return ModeChange{Mode: mode, Arg: arg} }
func addTo(mode, target string) ModeChange { return ModeChange{Add: true, Mode: mode, Target: target} }
func delTo(mode, target string) ModeChange { return ModeChange{Mode: mode, Target: target} }

func modes(session, channel string, changes ...ModeChange) Mode {
	return Mode{Session: session, Channel: channel, Changes: changes}
}

// channelWorld: alice founds #c, then bob and guest join it.
func channelWorld() []Command {
	return with(world(),
		Join{Session: "s-alice", Channel: "#c"},
		Join{Session: "s-bob", Channel: "#c"},
		Join{Session: "s-guest", Channel: "#c"},
	)
}

// aliceOnly: alice founds #c and is its only member.
func aliceOnly(more ...Command) []Command {
	return with(with(world(), Join{Session: "s-alice", Channel: "#c"}), more...)
}

func member(id string, want bool) func(*testing.T, *State, int64) {
	return func(t *testing.T, st *State, _ int64) {
		c := st.channels["#c"]
		got := c != nil && c.members[id] != nil
		if got != want {
			t.Errorf("%s member of #c: %v, want %v", id, got, want)
		}
	}
}

func TestApplyJoin(t *testing.T) {
	limit := with(world())
	for i := range MaxChannelsPerSession {
		limit = append(limit, Join{Session: "s-guest", Channel: fmt.Sprintf("#c%d", i)})
	}
	carolFounded := with(world(), reg("s-carol", "carol", didCarol), Join{Session: "s-carol", Channel: "#c"},
		EndSession{Session: "s-carol"})
	guestTopic := with(world(), Join{Session: "s-guest", Channel: "#c"},
		Topic{Session: "s-guest", Channel: "#c", Text: "kept"}, Part{Session: "s-guest", Channel: "#c"})

	runApplyCases(t, []applyCase{
		{
			name: "guest creates", setup: world(), cmd: Join{Session: "s-guest", Channel: "#new"},
			want: Result{Code: OK, Member: &Member{Op: true}, Created: true}, events: []EventKind{EvJoin},
			check: func(t *testing.T, st *State, at int64) {
				c := st.channels["#new"]
				if c == nil || !c.NoExternal || !c.TopicLock || c.InviteOnly || c.FounderDID != "" || c.CreatedAt != at {
					t.Fatalf("channel %+v", c)
				}
				if c.ModeString() != "+nt" || !c.members["s-guest"].Op || !st.sessions["s-guest"].channels["#new"] {
					t.Errorf("modes %s members %v", c.ModeString(), c.members)
				}
			},
		},
		{
			name: "authenticated creator is founder", setup: world(), cmd: Join{Session: "s-alice", Channel: "&local"},
			want: Result{Code: OK, Member: &Member{Op: true}, Created: true}, events: []EventKind{EvJoin},
			check: func(t *testing.T, st *State, _ int64) {
				if st.channels["&local"].FounderDID != didAlice {
					t.Errorf("founder %q", st.channels["&local"].FounderDID)
				}
			},
		},
		{name: "existing channel", setup: aliceOnly(), cmd: Join{Session: "s-bob", Channel: "#c"}, want: Result{Code: OK, Member: &Member{}}, events: []EventKind{EvJoin}},
		{name: "already a member", setup: channelWorld(), cmd: Join{Session: "s-bob", Channel: "#c"}, want: Result{Code: NoChange}},
		{name: "no session", setup: world(), cmd: Join{Session: "s-x", Channel: "#c"}, want: Result{Code: ErrNoSuchSession}},
		{name: "name empty", setup: world(), cmd: Join{Session: "s-bob"}, want: Result{Code: ErrBadName}},
		{name: "name prefix only", setup: world(), cmd: Join{Session: "s-bob", Channel: "#"}, want: Result{Code: ErrBadName}},
		{name: "name without prefix", setup: world(), cmd: Join{Session: "s-bob", Channel: "chan"}, want: Result{Code: ErrBadName}},
		{name: "name with + prefix", setup: world(), cmd: Join{Session: "s-bob", Channel: "+chan"}, want: Result{Code: ErrBadName}},
		{name: "name not folded", setup: world(), cmd: Join{Session: "s-bob", Channel: "#Chan"}, want: Result{Code: ErrBadName}},
		{name: "name too long", setup: world(), cmd: Join{Session: "s-bob", Channel: "#" + strings.Repeat("x", MaxChannelLen)}, want: Result{Code: ErrBadName}},
		{
			name: "name at the limit", setup: world(), cmd: Join{Session: "s-bob", Channel: "#" + strings.Repeat("x", MaxChannelLen-1)},
			want: Result{Code: OK, Member: &Member{Op: true}, Created: true}, events: []EventKind{EvJoin},
		},
		{
			name: "banned by hostmask glob", setup: aliceOnly(modes("s-alice", "#c", add("b", "GUEST!*@*"))),
			cmd: Join{Session: "s-guest", Channel: "#c"}, want: Result{Code: ErrBanned}, check: member("s-guest", false),
		},
		{
			name: "hostmask ban hits authenticated users", setup: aliceOnly(modes("s-alice", "#c", add("b", "*!*@host-s-bob"))),
			cmd: Join{Session: "s-bob", Channel: "#c"}, want: Result{Code: ErrBanned},
		},
		{
			name: "banned by DID", setup: aliceOnly(modes("s-alice", "#c", add("b", didBob))),
			cmd: Join{Session: "s-bob", Channel: "#c"}, want: Result{Code: ErrBanned},
		},
		{
			name: "DID ban spares others", setup: aliceOnly(modes("s-alice", "#c", add("b", didBob))),
			cmd: Join{Session: "s-guest", Channel: "#c"}, want: Result{Code: OK, Member: &Member{}}, events: []EventKind{EvJoin},
		},
		{
			name: "DID ban is exact, not a glob", setup: aliceOnly(modes("s-alice", "#c", add("b", "did:*"))),
			cmd: Join{Session: "s-bob", Channel: "#c"}, want: Result{Code: OK, Member: &Member{}}, events: []EventKind{EvJoin},
		},
		{name: "key missing", setup: aliceOnly(modes("s-alice", "#c", add("k", "sekrit"))), cmd: Join{Session: "s-guest", Channel: "#c"}, want: Result{Code: ErrBadKey}},
		{name: "key wrong", setup: aliceOnly(modes("s-alice", "#c", add("k", "sekrit"))), cmd: Join{Session: "s-guest", Channel: "#c", Key: "SEKRIT"}, want: Result{Code: ErrBadKey}},
		{
			name: "key right", setup: aliceOnly(modes("s-alice", "#c", add("k", "sekrit"))), cmd: Join{Session: "s-guest", Channel: "#c", Key: "sekrit"},
			want: Result{Code: OK, Member: &Member{}}, events: []EventKind{EvJoin},
		},
		{name: "invite only", setup: aliceOnly(modes("s-alice", "#c", add("i", ""))), cmd: Join{Session: "s-guest", Channel: "#c"}, want: Result{Code: ErrInviteOnly}},
		{
			name: "invite consumed", setup: aliceOnly(modes("s-alice", "#c", add("i", "")), Invite{Session: "s-alice", Channel: "#c", Target: "s-guest"}),
			cmd: Join{Session: "s-guest", Channel: "#c"}, want: Result{Code: OK, Member: &Member{}}, events: []EventKind{EvJoin},
			check: func(t *testing.T, st *State, _ int64) {
				if n := len(st.channels["#c"].invites); n != 0 {
					t.Errorf("invite not consumed: %v", st.channels["#c"].invites)
				}
			},
		},
		{
			name: "invite bypasses key", setup: aliceOnly(modes("s-alice", "#c", add("k", "k")), Invite{Session: "s-alice", Channel: "#c", Target: "s-bob"}),
			cmd: Join{Session: "s-bob", Channel: "#c"}, want: Result{Code: OK, Member: &Member{}}, events: []EventKind{EvJoin},
		},
		{
			name: "exception by hostmask", setup: aliceOnly(modes("s-alice", "#c", add("i", ""), add("I", "guest!*@*"))),
			cmd: Join{Session: "s-guest", Channel: "#c"}, want: Result{Code: OK, Member: &Member{}}, events: []EventKind{EvJoin},
		},
		{
			name: "exception by DID", setup: aliceOnly(modes("s-alice", "#c", add("i", ""), add("I", didBob))),
			cmd: Join{Session: "s-bob", Channel: "#c"}, want: Result{Code: OK, Member: &Member{}}, events: []EventKind{EvJoin},
		},
		{
			name: "exception does not bypass key", setup: aliceOnly(modes("s-alice", "#c", add("i", ""), add("k", "k"), add("I", didBob))),
			cmd: Join{Session: "s-bob", Channel: "#c"}, want: Result{Code: ErrBadKey},
		},
		{
			name: "ban beats invite",
			setup: aliceOnly(modes("s-alice", "#c", add("i", ""), add("b", "guest!*@*")),
				Invite{Session: "s-alice", Channel: "#c", Target: "s-guest"}),
			cmd: Join{Session: "s-guest", Channel: "#c"}, want: Result{Code: ErrBanned},
			check: func(t *testing.T, st *State, _ int64) {
				if _, ok := st.channels["#c"].invites["sid:s-guest"]; !ok {
					t.Errorf("refused join consumed the invite")
				}
			},
		},
		{
			name: "ban beats exception", setup: aliceOnly(modes("s-alice", "#c", add("i", ""), add("b", didBob), add("I", didBob))),
			cmd: Join{Session: "s-bob", Channel: "#c"}, want: Result{Code: ErrBanned},
		},
		{
			name: "founder bypasses everything",
			setup: aliceOnly(Join{Session: "s-bob", Channel: "#c"}, modes("s-alice", "#c", addTo("o", "s-bob")),
				Part{Session: "s-alice", Channel: "#c"},
				modes("s-bob", "#c", add("i", ""), add("k", "k"), add("b", didAlice), add("b", "alice!*@*"))),
			cmd: Join{Session: "s-alice", Channel: "#c"}, want: Result{Code: OK, Member: &Member{Op: true}}, events: []EventKind{EvJoin},
		},
		{
			name:  "server operator bypasses everything, without op",
			setup: aliceOnly(modes("s-alice", "#c", add("i", ""), add("k", "k"), add("b", "oper!*@*"))),
			cmd:   Join{Session: "s-oper", Channel: "#c"}, want: Result{Code: OK, Member: &Member{}}, events: []EventKind{EvJoin},
		},
		{
			name:  "DID op is auto-opped",
			setup: aliceOnly(Join{Session: "s-bob", Channel: "#c"}, modes("s-alice", "#c", addTo("o", "s-bob")), Part{Session: "s-bob", Channel: "#c"}),
			cmd:   Join{Session: "s-bob", Channel: "#c"}, want: Result{Code: OK, Member: &Member{Op: true}}, events: []EventKind{EvJoin},
		},
		{
			name:  "guest op is not persistent",
			setup: aliceOnly(Join{Session: "s-guest", Channel: "#c"}, modes("s-alice", "#c", addTo("o", "s-guest")), Part{Session: "s-guest", Channel: "#c"}),
			cmd:   Join{Session: "s-guest", Channel: "#c"}, want: Result{Code: OK, Member: &Member{}}, events: []EventKind{EvJoin},
		},
		{
			name: "founder's empty channel stays founded", setup: carolFounded, cmd: Join{Session: "s-bob", Channel: "#c"},
			want: Result{Code: OK, Member: &Member{}}, events: []EventKind{EvJoin},
			check: func(t *testing.T, st *State, _ int64) {
				if st.channels["#c"].FounderDID != didCarol {
					t.Errorf("founder %q", st.channels["#c"].FounderDID)
				}
			},
		},
		{
			name: "unowned empty channel is founded by the next authenticated joiner", setup: guestTopic,
			cmd: Join{Session: "s-bob", Channel: "#c"}, want: Result{Code: OK, Member: &Member{Op: true}}, events: []EventKind{EvJoin},
			check: func(t *testing.T, st *State, _ int64) {
				if c := st.channels["#c"]; c.FounderDID != didBob || c.Topic != "kept" {
					t.Errorf("channel %+v", c)
				}
			},
		},
		{
			name: "unowned empty channel is not founded by a guest", setup: with(guestTopic, reg("s-g2", "g2", "")),
			cmd: Join{Session: "s-g2", Channel: "#c"}, want: Result{Code: OK, Member: &Member{}}, events: []EventKind{EvJoin},
		},
		{
			name: "channel limit", setup: limit, cmd: Join{Session: "s-guest", Channel: "#one-too-many"}, want: Result{Code: ErrTooManyChannels},
			check: func(t *testing.T, st *State, _ int64) {
				if st.channels["#one-too-many"] != nil || len(st.sessions["s-guest"].channels) != MaxChannelsPerSession {
					t.Errorf("limit not enforced")
				}
			},
		},
		{name: "channel limit, already a member", setup: limit, cmd: Join{Session: "s-guest", Channel: "#c7"}, want: Result{Code: NoChange}},
	})
}

func TestJoinEvent(t *testing.T) {
	h := newHarness(t)
	h.mustOK(world()...)
	h.takeEvents()
	h.mustOK(Join{Session: "s-alice", Channel: "#c"}, Join{Session: "s-bob", Channel: "#c"})
	evs := h.takeEvents()
	if len(evs) != 2 {
		t.Fatalf("events %+v", evs)
	}
	first, second := evs[0], evs[1]
	if first.Kind != EvJoin || first.Channel != "#c" || !first.Created || !first.Member.Op || first.Actor.DID != didAlice ||
		first.Actor.Realname != "Real alice" || first.Member.JoinedAt != first.Time {
		t.Errorf("first join %+v", first)
	}
	if second.Created || second.Member.Op || second.Actor.ID != "s-bob" || second.Index != first.Index+1 {
		t.Errorf("second join %+v", second)
	}
}

func TestInviteByDIDSurvivesReconnect(t *testing.T) {
	h := newHarness(t)
	h.mustOK(aliceOnly(modes("s-alice", "#c", add("i", "")), Invite{Session: "s-alice", Channel: "#c", Target: "s-bob"},
		EndSession{Session: "s-bob"}, reg("s-bob-2", "bob", didBob))...)
	h.read(func(st *State) {
		if _, ok := st.channels["#c"].invites[InviteKey("s-bob", didBob)]; !ok {
			t.Fatalf("invites %v", st.channels["#c"].invites)
		}
	})
	if r := h.apply(Join{Session: "s-bob-2", Channel: "#c"}); r.Code != OK {
		t.Errorf("join after reconnect: %v", r.Code)
	}
}

func TestApplyPart(t *testing.T) {
	guestChannel := with(world(), Join{Session: "s-guest", Channel: "#g"})
	runApplyCases(t, []applyCase{
		{
			name: "member parts", setup: channelWorld(), cmd: Part{Session: "s-bob", Channel: "#c", Reason: "later"},
			want: Result{Code: OK}, events: []EventKind{EvPart}, check: member("s-bob", false),
		},
		{name: "not on channel", setup: aliceOnly(), cmd: Part{Session: "s-bob", Channel: "#c"}, want: Result{Code: ErrNotOnChannel}},
		{name: "no channel", setup: world(), cmd: Part{Session: "s-bob", Channel: "#none"}, want: Result{Code: ErrNoSuchChannel}},
		{name: "no session", setup: channelWorld(), cmd: Part{Session: "s-x", Channel: "#c"}, want: Result{Code: ErrNoSuchSession}},
		{
			name: "last guest leaves: channel deleted", setup: guestChannel, cmd: Part{Session: "s-guest", Channel: "#g"},
			want: Result{Code: OK}, events: []EventKind{EvPart},
			check: func(t *testing.T, st *State, _ int64) {
				if st.channels["#g"] != nil {
					t.Errorf("empty channel kept")
				}
			},
		},
		{
			name: "founder leaves last: channel kept", setup: aliceOnly(), cmd: Part{Session: "s-alice", Channel: "#c"},
			want: Result{Code: OK}, events: []EventKind{EvPart},
			check: func(t *testing.T, st *State, _ int64) {
				if c := st.channels["#c"]; c == nil || len(c.members) != 0 {
					t.Errorf("channel %+v", c)
				}
			},
		},
		{
			name: "DID ops keep a channel",
			setup: with(guestChannel, Join{Session: "s-bob", Channel: "#g"}, modes("s-guest", "#g", addTo("o", "s-bob")),
				Part{Session: "s-bob", Channel: "#g"}),
			cmd: Part{Session: "s-guest", Channel: "#g"}, want: Result{Code: OK}, events: []EventKind{EvPart},
			check: func(t *testing.T, st *State, _ int64) {
				if c := st.channels["#g"]; c == nil || !c.didOps[didBob] {
					t.Errorf("channel %+v", c)
				}
			},
		},
		{
			name: "bans keep a channel", setup: with(guestChannel, modes("s-guest", "#g", add("b", "x!*@*"))),
			cmd: Part{Session: "s-guest", Channel: "#g"}, want: Result{Code: OK}, events: []EventKind{EvPart},
			check: func(t *testing.T, st *State, _ int64) {
				if st.channels["#g"] == nil {
					t.Errorf("channel with bans deleted")
				}
			},
		},
		{
			name: "exceptions keep a channel", setup: with(guestChannel, modes("s-guest", "#g", add("I", "x!*@*"))),
			cmd: Part{Session: "s-guest", Channel: "#g"}, want: Result{Code: OK}, events: []EventKind{EvPart},
			check: func(t *testing.T, st *State, _ int64) {
				if st.channels["#g"] == nil {
					t.Errorf("channel with exceptions deleted")
				}
			},
		},
	})
}

func TestApplyKick(t *testing.T) {
	bobHalf := with(channelWorld(), modes("s-alice", "#c", addTo("h", "s-bob")))
	// carol founds #c and leaves; guest joins and later authenticates as carol, so the founder is
	// a member without op; the server operator makes bob a halfop.
	founderNotOp := with(world(), reg("s-carol", "carol", didCarol), Join{Session: "s-carol", Channel: "#c"},
		EndSession{Session: "s-carol"}, Join{Session: "s-guest", Channel: "#c"}, Join{Session: "s-bob", Channel: "#c"},
		modes("s-oper", "#c", addTo("h", "s-bob")), Authenticate{Session: "s-guest", DID: didCarol, TokenHash: "t"})
	runApplyCases(t, []applyCase{
		{
			name: "op kicks", setup: channelWorld(), cmd: Kick{Session: "s-alice", Channel: "#c", Target: "s-guest", Reason: "out"},
			want: Result{Code: OK}, events: []EventKind{EvKick},
			check: func(t *testing.T, st *State, _ int64) {
				if st.channels["#c"].members["s-guest"] != nil || st.sessions["s-guest"].channels["#c"] {
					t.Errorf("guest still in #c")
				}
			},
		},
		{name: "plain member", setup: channelWorld(), cmd: Kick{Session: "s-bob", Channel: "#c", Target: "s-guest"}, want: Result{Code: ErrChanOpNeeded}, check: member("s-guest", true)},
		{name: "halfop kicks a plain member", setup: bobHalf, cmd: Kick{Session: "s-bob", Channel: "#c", Target: "s-guest"}, want: Result{Code: OK}, events: []EventKind{EvKick}},
		{
			name: "halfop kicks a voiced member", setup: with(bobHalf, modes("s-alice", "#c", addTo("v", "s-guest"))),
			cmd: Kick{Session: "s-bob", Channel: "#c", Target: "s-guest"}, want: Result{Code: OK}, events: []EventKind{EvKick},
		},
		{name: "halfop kicks an op", setup: bobHalf, cmd: Kick{Session: "s-bob", Channel: "#c", Target: "s-alice"}, want: Result{Code: ErrChanOpNeeded}, check: member("s-alice", true)},
		{
			name: "halfop kicks a halfop", setup: with(bobHalf, modes("s-alice", "#c", addTo("h", "s-guest"))),
			cmd: Kick{Session: "s-bob", Channel: "#c", Target: "s-guest"}, want: Result{Code: ErrChanOpNeeded},
		},
		{name: "halfop kicks the founder", setup: founderNotOp, cmd: Kick{Session: "s-bob", Channel: "#c", Target: "s-guest"}, want: Result{Code: ErrChanOpNeeded}, check: member("s-guest", true)},
		{
			name: "founder without op kicks as an op", setup: founderNotOp, cmd: Kick{Session: "s-guest", Channel: "#c", Target: "s-bob"},
			want: Result{Code: OK}, events: []EventKind{EvKick},
		},
		{
			// The reference protects the founder from de-op only; a founder can always rejoin.
			name: "op kicks the founder", setup: with(channelWorld(), modes("s-alice", "#c", addTo("o", "s-bob"))),
			cmd: Kick{Session: "s-bob", Channel: "#c", Target: "s-alice"}, want: Result{Code: OK}, events: []EventKind{EvKick},
		},
		{name: "kicker not on channel", setup: aliceOnly(Join{Session: "s-guest", Channel: "#c"}), cmd: Kick{Session: "s-bob", Channel: "#c", Target: "s-guest"}, want: Result{Code: ErrNotOnChannel}},
		{name: "server operator from outside", setup: channelWorld(), cmd: Kick{Session: "s-oper", Channel: "#c", Target: "s-alice"}, want: Result{Code: OK}, events: []EventKind{EvKick}},
		{name: "target not on channel", setup: aliceOnly(), cmd: Kick{Session: "s-alice", Channel: "#c", Target: "s-bob"}, want: Result{Code: ErrUserNotInChannel}},
		{name: "target gone", setup: aliceOnly(), cmd: Kick{Session: "s-alice", Channel: "#c", Target: "s-x"}, want: Result{Code: ErrUserNotInChannel}},
		{name: "no channel", setup: world(), cmd: Kick{Session: "s-alice", Channel: "#none", Target: "s-bob"}, want: Result{Code: ErrNoSuchChannel}},
		{name: "no session", setup: channelWorld(), cmd: Kick{Session: "s-x", Channel: "#c", Target: "s-bob"}, want: Result{Code: ErrNoSuchSession}},
		{
			name: "kicking the last guest deletes the channel", setup: with(world(), Join{Session: "s-guest", Channel: "#g"}),
			cmd: Kick{Session: "s-oper", Channel: "#g", Target: "s-guest"}, want: Result{Code: OK}, events: []EventKind{EvKick},
			check: func(t *testing.T, st *State, _ int64) {
				if st.channels["#g"] != nil {
					t.Errorf("empty channel kept")
				}
			},
		},
	})
}

func TestKickEvent(t *testing.T) {
	h := newHarness(t)
	h.mustOK(channelWorld()...)
	h.takeEvents()
	h.mustOK(Kick{Session: "s-alice", Channel: "#c", Target: "s-guest", Reason: "flood"})
	evs := h.takeEvents()
	if len(evs) != 1 || evs[0].Kind != EvKick || evs[0].Actor.ID != "s-alice" || evs[0].Target.ID != "s-guest" ||
		evs[0].Target.Hostmask() != "guest!us-guest@host-s-guest" || evs[0].Channel != "#c" || evs[0].Text != "flood" {
		t.Errorf("events %+v", evs)
	}
}

func TestApplyTopic(t *testing.T) {
	topicSet := func(text, by string) func(*testing.T, *State, int64) {
		return func(t *testing.T, st *State, at int64) {
			c := st.channels["#c"]
			wantAt := at
			if text == "" {
				wantAt = 0
			}
			if c.Topic != text || c.TopicBy != by || c.TopicAt != wantAt {
				t.Errorf("topic %q by %q at %d, want %q by %q at %d", c.Topic, c.TopicBy, c.TopicAt, text, by, wantAt)
			}
		}
	}
	const aliceMask = "alice!us-alice@host-s-alice"
	runApplyCases(t, []applyCase{
		{
			name: "op on +t", setup: channelWorld(), cmd: Topic{Session: "s-alice", Channel: "#c", Text: "hello"},
			want: Result{Code: OK}, events: []EventKind{EvTopic}, check: topicSet("hello", aliceMask),
		},
		{name: "member on +t", setup: channelWorld(), cmd: Topic{Session: "s-bob", Channel: "#c", Text: "x"}, want: Result{Code: ErrChanOpNeeded}, check: topicSet("", "")},
		{
			name: "halfop on +t", setup: with(channelWorld(), modes("s-alice", "#c", addTo("h", "s-bob"))),
			cmd: Topic{Session: "s-bob", Channel: "#c", Text: "x"}, want: Result{Code: OK}, events: []EventKind{EvTopic},
		},
		{name: "voiced on +t", setup: with(channelWorld(), modes("s-alice", "#c", addTo("v", "s-bob"))), cmd: Topic{Session: "s-bob", Channel: "#c", Text: "x"}, want: Result{Code: ErrChanOpNeeded}},
		{
			name: "member on -t", setup: with(channelWorld(), modes("s-alice", "#c", del("t", ""))),
			cmd: Topic{Session: "s-guest", Channel: "#c", Text: "free"}, want: Result{Code: OK}, events: []EventKind{EvTopic},
			check: topicSet("free", "guest!us-guest@host-s-guest"),
		},
		{name: "too long", setup: channelWorld(), cmd: Topic{Session: "s-alice", Channel: "#c", Text: strings.Repeat("x", MaxTopicLen+1)}, want: Result{Code: ErrTopicTooLong}},
		{name: "at the limit", setup: channelWorld(), cmd: Topic{Session: "s-alice", Channel: "#c", Text: strings.Repeat("x", MaxTopicLen)}, want: Result{Code: OK}, events: []EventKind{EvTopic}},
		{
			name: "clear", setup: with(channelWorld(), Topic{Session: "s-alice", Channel: "#c", Text: "old"}),
			cmd: Topic{Session: "s-alice", Channel: "#c"}, want: Result{Code: OK}, events: []EventKind{EvTopic}, check: topicSet("", ""),
		},
		{name: "not on channel", setup: aliceOnly(modes("s-alice", "#c", del("t", ""))), cmd: Topic{Session: "s-bob", Channel: "#c", Text: "x"}, want: Result{Code: ErrNotOnChannel}},
		{
			name: "server operator from outside", setup: aliceOnly(), cmd: Topic{Session: "s-oper", Channel: "#c", Text: "ops"},
			want: Result{Code: OK}, events: []EventKind{EvTopic}, check: topicSet("ops", "oper!us-oper@host-s-oper"),
		},
		{name: "no channel", setup: world(), cmd: Topic{Session: "s-alice", Channel: "#none", Text: "x"}, want: Result{Code: ErrNoSuchChannel}},
		{name: "no session", setup: channelWorld(), cmd: Topic{Session: "s-x", Channel: "#c", Text: "x"}, want: Result{Code: ErrNoSuchSession}},
	})
}

func TestApplyInvite(t *testing.T) {
	invited := func(key string) func(*testing.T, *State, int64) {
		return func(t *testing.T, st *State, at int64) {
			if got, ok := st.channels["#c"].invites[key]; !ok || got != at {
				t.Errorf("invites %v, want %s at %d", st.channels["#c"].invites, key, at)
			}
		}
	}
	inviteOnly := aliceOnly(Join{Session: "s-bob", Channel: "#c"}, modes("s-alice", "#c", add("i", "")))
	runApplyCases(t, []applyCase{
		{
			name: "member invites a guest", setup: aliceOnly(Join{Session: "s-bob", Channel: "#c"}),
			cmd: Invite{Session: "s-bob", Channel: "#c", Target: "s-guest"}, want: Result{Code: OK}, events: []EventKind{EvInvite},
			check: invited("sid:s-guest"),
		},
		{
			name: "invite filed by DID", setup: aliceOnly(), cmd: Invite{Session: "s-alice", Channel: "#c", Target: "s-bob"},
			want: Result{Code: OK}, events: []EventKind{EvInvite}, check: invited(InviteKey("s-bob", didBob)),
		},
		{name: "inviter not on channel", setup: aliceOnly(), cmd: Invite{Session: "s-bob", Channel: "#c", Target: "s-guest"}, want: Result{Code: ErrNotOnChannel}},
		{
			name: "server operator from outside", setup: aliceOnly(modes("s-alice", "#c", add("i", ""))),
			cmd: Invite{Session: "s-oper", Channel: "#c", Target: "s-guest"}, want: Result{Code: OK}, events: []EventKind{EvInvite},
		},
		{name: "+i needs op", setup: inviteOnly, cmd: Invite{Session: "s-bob", Channel: "#c", Target: "s-guest"}, want: Result{Code: ErrChanOpNeeded}},
		{name: "+i op invites", setup: inviteOnly, cmd: Invite{Session: "s-alice", Channel: "#c", Target: "s-guest"}, want: Result{Code: OK}, events: []EventKind{EvInvite}, check: invited("sid:s-guest")},
		{name: "target already on channel", setup: channelWorld(), cmd: Invite{Session: "s-alice", Channel: "#c", Target: "s-bob"}, want: Result{Code: ErrUserOnChannel}},
		{name: "target gone", setup: aliceOnly(), cmd: Invite{Session: "s-alice", Channel: "#c", Target: "s-x"}, want: Result{Code: ErrNoSuchSession}},
		{name: "no channel", setup: world(), cmd: Invite{Session: "s-alice", Channel: "#none", Target: "s-bob"}, want: Result{Code: ErrNoSuchChannel}},
		{name: "no session", setup: aliceOnly(), cmd: Invite{Session: "s-x", Channel: "#c", Target: "s-bob"}, want: Result{Code: ErrNoSuchSession}},
	})
}

func TestInviteListBounded(t *testing.T) {
	h := newHarness(t)
	h.mustOK(aliceOnly()...)
	st := NewState()
	if err := st.decode(snapshotBytes(t, h.m)); err != nil {
		t.Fatalf("decode snapshot: %v", err)
	}
	invites := map[string]int64{}
	for i := range MaxListEntries {
		invites[fmt.Sprintf("sid:old-%03d", i)] = int64(1000 + i%250) // pairs of equal times: ties break by key
	}
	st.channels["#c"].invites = invites
	h.restore(st)
	h.mustOK(Invite{Session: "s-alice", Channel: "#c", Target: "s-guest"}, Invite{Session: "s-alice", Channel: "#c", Target: "s-bob"})
	h.read(func(s *State) {
		got := s.channels["#c"].invites
		if len(got) != MaxListEntries {
			t.Fatalf("%d invites, want %d", len(got), MaxListEntries)
		}
		for _, gone := range []string{"sid:old-000", "sid:old-250"} { // the two invites stamped 1000
			if _, ok := got[gone]; ok {
				t.Errorf("oldest invite %s kept", gone)
			}
		}
		for _, kept := range []string{"sid:old-001", "sid:old-251", "sid:s-guest", InviteKey("s-bob", didBob)} {
			if _, ok := got[kept]; !ok {
				t.Errorf("invite %s evicted", kept)
			}
		}
	})
}
