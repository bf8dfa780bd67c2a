package fsm

import (
	"strings"
	"testing"
)

func init() {
	extraSamples = append(extraSamples,
		AVOperatorEnd{CallID: "c1", DID: "did:plc:alice", Session: "s1", ServerOper: true, Reason: "done"})
	extraGolden = append(extraGolden,
		"\x38\x00"+`{"rid":"r1","node":"n1","ts":1700000000000,"body":{"call_id":"c1","did":"did:plc:alice","session":"s1","server_oper":true,"reason":"done"}}`)
}

func TestAVOperatorEnd(t *testing.T) {
	// alice founds #c (op); bob and the guest are plain members; oper is a server operator
	// outside the channel.
	inChan := with(world(), Join{Session: "s-alice", Channel: "#c"}, Join{Session: "s-bob", Channel: "#c"},
		Join{Session: "s-guest", Channel: "#c"})
	started := with(inChan, AVStart{CallID: "C1", Channel: "#c", Node: "n1", DID: didBob},
		AVJoin{CallID: "C1", DID: didAlice}, AVJoin{CallID: "C1", DID: didBob})
	guestOp := with(started, Mode{Session: "s-alice", Channel: "#c", Changes: []ModeChange{{Add: true, Mode: "o", Arg: "guest", Target: "s-guest"}}})
	bobDIDOp := with(started, Mode{Session: "s-alice", Channel: "#c", Changes: []ModeChange{{Add: true, Mode: "o", Arg: "bob", Target: "s-bob"}}},
		Part{Session: "s-bob", Channel: "#c"})
	ended := func(by, nick, reason string) func(t *testing.T, st *State, at int64) {
		return func(t *testing.T, st *State, at int64) {
			if _, ok := st.AVActive("#c"); ok {
				t.Fatal("still active")
			}
			c, ok := st.AVCall("C1")
			if !ok || c.EndedAt != at || c.EndedBy != by || c.EndReason != reason || c.LiveParticipants() != 0 {
				t.Fatalf("call %+v", c)
			}
			for _, p := range c.Participants {
				if p.LeftAt != at || p.Reason != "call ended" {
					t.Fatalf("participant %+v", p)
				}
			}
		}
	}
	live := func(t *testing.T, st *State, _ int64) {
		if c, ok := st.AVActive("#c"); !ok || c.LiveParticipants() != 2 {
			t.Fatalf("the call changed: %+v %v", c, ok)
		}
	}
	cases := []applyCase{
		{name: "channel op by session", setup: started, cmd: AVOperatorEnd{CallID: "C1", DID: didAlice, Session: "s-alice", Reason: "meeting over"},
			want: Result{Code: OK}, events: []EventKind{EvAVEnded}, check: ended(didAlice, "alice", "meeting over")},
		{name: "channel op over REST (no session)", setup: started, cmd: AVOperatorEnd{CallID: "C1", DID: didAlice},
			want: Result{Code: OK}, events: []EventKind{EvAVEnded}, check: ended(didAlice, "alice", avOperatorReason)},
		{name: "guest channel op", setup: guestOp, cmd: AVOperatorEnd{CallID: "C1", Session: "s-guest"},
			want: Result{Code: OK}, events: []EventKind{EvAVEnded}, check: ended("", "guest", avOperatorReason)},
		{name: "DID op not in the channel", setup: bobDIDOp, cmd: AVOperatorEnd{CallID: "C1", DID: didBob},
			want: Result{Code: OK}, events: []EventKind{EvAVEnded}},
		{name: "server operator session", setup: started, cmd: AVOperatorEnd{CallID: "C1", Session: "s-oper"},
			want: Result{Code: OK}, events: []EventKind{EvAVEnded}},
		{name: "configured operator DID", setup: started, cmd: AVOperatorEnd{CallID: "C1", DID: didCarol, ServerOper: true},
			want: Result{Code: OK}, events: []EventKind{EvAVEnded}, check: ended(didCarol, "", avOperatorReason)},
		{name: "the starter is no operator", setup: started, cmd: AVOperatorEnd{CallID: "C1", DID: didBob, Session: "s-bob"},
			want: Result{Code: ErrAVNotOperator}, check: live},
		{name: "guest, not op", setup: started, cmd: AVOperatorEnd{CallID: "C1", Session: "s-guest"},
			want: Result{Code: ErrAVNotOperator}, check: live},
		{name: "server-operator flag without a DID", setup: started, cmd: AVOperatorEnd{CallID: "C1", Session: "s-guest", ServerOper: true},
			want: Result{Code: ErrAVNotOperator}, check: live},
		{name: "another account's op session", setup: started, cmd: AVOperatorEnd{CallID: "C1", DID: didBob, Session: "s-alice"},
			want: Result{Code: ErrAVNotOperator}, check: live},
		{name: "unknown call", setup: started, cmd: AVOperatorEnd{CallID: "C9", DID: didAlice}, want: Result{Code: ErrAVNoCall}},
		{name: "ended call", setup: with(started, AVEnd{CallID: "C1"}), cmd: AVOperatorEnd{CallID: "C1", DID: didAlice},
			want: Result{Code: ErrAVNoCall}},
		{name: "nobody", setup: started, cmd: AVOperatorEnd{CallID: "C1"}, want: Result{Code: ErrInvalid}, check: live},
		{name: "no call id", setup: started, cmd: AVOperatorEnd{DID: didAlice}, want: Result{Code: ErrInvalid}, check: live},
		{name: "long reason clipped", setup: started, cmd: AVOperatorEnd{CallID: "C1", DID: didAlice, Reason: strings.Repeat("x", MaxAVReason+5)},
			want: Result{Code: OK}, events: []EventKind{EvAVEnded}, check: ended(didAlice, "alice", strings.Repeat("x", MaxAVReason))},
	}
	runApplyCases(t, cases)

	h := newHarness(t)
	h.mustOK(guestOp...)
	h.read(func(st *State) {
		for _, tc := range []struct {
			did, session string
			want         bool
		}{
			{didAlice, "", true}, {"", "s-alice", true}, {didBob, "s-bob", false}, {"", "s-guest", true},
			{"", "s-oper", true}, {didCarol, "", false}, {"", "", false}, {didBob, "s-alice", false},
		} {
			if got := st.AVMayEnd("#c", tc.did, tc.session); got != tc.want {
				t.Errorf("may end %q %q: %v, want %v", tc.did, tc.session, got, tc.want)
			}
		}
		if st.AVMayEnd("#none", didAlice, "s-alice") {
			t.Error("a channel op ends calls of a channel that does not exist")
		}
	})
}
