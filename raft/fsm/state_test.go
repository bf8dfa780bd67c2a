package fsm

import (
	"slices"
	"testing"
)

func TestMemberPrefixes(t *testing.T) {
	tests := []struct {
		m            Member
		multi, first string
	}{
		{Member{}, "", ""},
		{Member{Voice: true}, "+", "+"},
		{Member{HalfOp: true, Voice: true}, "%+", "%"},
		{Member{Op: true, Voice: true}, "@+", "@"},
		{Member{Op: true, HalfOp: true, Voice: true}, "@%+", "@"},
	}
	for _, tc := range tests {
		if got := tc.m.Prefixes(true); got != tc.multi {
			t.Errorf("%+v multi = %q, want %q", tc.m, got, tc.multi)
		}
		if got := tc.m.Prefixes(false); got != tc.first {
			t.Errorf("%+v single = %q, want %q", tc.m, got, tc.first)
		}
	}
}

func TestChannelModeString(t *testing.T) {
	tests := []struct {
		c            Channel
		want         string
		discoverable bool
	}{
		{Channel{}, "+", true},
		{Channel{NoExternal: true, TopicLock: true}, "+nt", true},
		{Channel{Key: "k", Encrypted: true, Moderated: true, InviteOnly: true, TopicLock: true, NoExternal: true}, "+ntimEk", false},
		{Channel{InviteOnly: true}, "+i", false},
		{Channel{Key: "secret"}, "+k", false},
		{Channel{Encrypted: true}, "+E", false},
		{Channel{Moderated: true}, "+m", true},
	}
	for _, tc := range tests {
		if got := tc.c.ModeString(); got != tc.want {
			t.Errorf("%+v ModeString = %q, want %q", tc.c, got, tc.want)
		}
		if got := tc.c.Discoverable(); got != tc.discoverable {
			t.Errorf("%+v Discoverable = %v", tc.c, got)
		}
	}
}

func TestChannelHelpers(t *testing.T) {
	c := &Channel{
		members:    map[string]*Member{"s3": {}, "s1": {}, "s2": {}},
		Bans:       []ListEntry{{Mask: "bad!*@*"}, {Mask: didBob}},
		Exceptions: []ListEntry{{Mask: "good!*@*"}},
	}
	if got := c.MemberIDs(); !slices.Equal(got, []string{"s1", "s2", "s3"}) {
		t.Errorf("MemberIDs = %v", got)
	}
	if !c.IsBanned("BAD!u@h", "") || !c.IsBanned("x!u@h", didBob) || c.IsBanned("good!u@h", didAlice) {
		t.Errorf("IsBanned")
	}
	if !c.IsExcepted("good!u@h", "") || c.IsExcepted("bad!u@h", "") {
		t.Errorf("IsExcepted")
	}
	if (&Channel{}).IsBanned("x!u@h", "") {
		t.Errorf("empty list bans")
	}
}

func TestInviteKey(t *testing.T) {
	if got := InviteKey("s1", ""); got != "sid:s1" {
		t.Errorf("guest key %q", got)
	}
	if got := InviteKey("s1", didAlice); got != "did:"+didAlice {
		t.Errorf("DID key %q", got)
	}
	if InviteKey("did:plc:x", "") == InviteKey("other", "plc:x") {
		t.Errorf("session and DID keys collide")
	}
}

func TestSessionRef(t *testing.T) {
	se := &Session{ID: "s1", Node: "n", Nick: "Nick", User: "u", Host: "h", DID: didAlice, Realname: "R", Away: "x"}
	ref := se.Ref()
	if ref != (SessionRef{ID: "s1", Node: "n", Nick: "Nick", User: "u", Host: "h", DID: didAlice, Realname: "R"}) {
		t.Errorf("Ref = %+v", ref)
	}
	if se.Hostmask() != "Nick!u@h" || ref.Hostmask() != "Nick!u@h" {
		t.Errorf("hostmasks %q %q", se.Hostmask(), ref.Hostmask())
	}
}

func TestStateLookups(t *testing.T) {
	h := newHarness(t)
	h.mustOK(with(world(), reg("s-alice2", "alice2", didAlice), Join{Session: "s-alice", Channel: "#c"},
		Join{Session: "s-bob", Channel: "#c"})...)
	h.read(func(st *State) {
		if se, ok := st.SessionByNick("ALICE"); !ok || se.ID != "s-alice" {
			t.Errorf("SessionByNick = %v", se)
		}
		if _, ok := st.SessionByNick("nobody"); ok {
			t.Errorf("unknown nick found")
		}
		var ids []string
		for _, se := range st.SessionsByDID(didAlice) {
			ids = append(ids, se.ID)
		}
		if !slices.Equal(ids, []string{"s-alice", "s-alice2"}) {
			t.Errorf("SessionsByDID = %v", ids)
		}
		if len(st.SessionsByDID("did:plc:none")) != 0 {
			t.Errorf("unknown DID found")
		}
		if se, ok := st.SessionByToken("tok-alice"); !ok || se.ID != "s-alice" {
			t.Errorf("SessionByToken = %v", se)
		}
		if _, ok := st.SessionByToken("nope"); ok {
			t.Errorf("unknown token found")
		}
		c := st.channels["#c"]
		for _, tc := range []struct {
			id   string
			want bool
		}{{"s-alice", true}, {"s-alice2", true}, {"s-bob", false}, {"s-guest", false}, {"s-oper", true}, {"s-none", false}} {
			if got := st.isChannelOp(c, st.sessions[tc.id]); got != tc.want {
				t.Errorf("IsChannelOp(%s) = %v, want %v", tc.id, got, tc.want)
			}
		}
	})
}
