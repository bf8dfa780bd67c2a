package av

import (
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

func TestAVOperatorEnd(t *testing.T) {
	// alice founds #c (op); bob and the guest are plain members; oper is a server operator
	// outside the channel.
	inChan := fsmtest.With(fsmtest.World(didAlice, didBob), fsm.Join{Session: "s-alice", Channel: "#c"}, fsm.Join{Session: "s-bob", Channel: "#c"},
		fsm.Join{Session: "s-guest", Channel: "#c"})
	started := fsmtest.With(inChan, AVStart{CallID: "C1", Channel: "#c", Node: "n1", DID: didBob},
		AVJoin{CallID: "C1", DID: didAlice}, AVJoin{CallID: "C1", DID: didBob})
	guestOp := fsmtest.With(started, fsm.Mode{Session: "s-alice", Channel: "#c", Changes: []fsm.ModeChange{{Add: true, Mode: "o", Arg: "guest", Target: "s-guest"}}})
	bobDIDOp := fsmtest.With(started, fsm.Mode{Session: "s-alice", Channel: "#c", Changes: []fsm.ModeChange{{Add: true, Mode: "o", Arg: "bob", Target: "s-bob"}}},
		fsm.Part{Session: "s-bob", Channel: "#c"})
	ended := func(by, nick, reason string) func(t *testing.T, st *fsm.State, at int64) {
		return func(t *testing.T, st *fsm.State, at int64) {
			if _, ok := Of(st).Active("#c"); ok {
				t.Fatal("still active")
			}
			c, ok := Of(st).Call("C1")
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
	live := func(t *testing.T, st *fsm.State, _ int64) {
		if c, ok := Of(st).Active("#c"); !ok || c.LiveParticipants() != 2 {
			t.Fatalf("the call changed: %+v %v", c, ok)
		}
	}
	cases := []fsmtest.Case{
		{Name: "channel op by session", Setup: started, Cmd: AVOperatorEnd{CallID: "C1", DID: didAlice, Session: "s-alice", Reason: "meeting over"},
			Want: fsm.Result{Code: fsm.OK}, Events: []fsm.EventKind{EvAVEnded}, Check: ended(didAlice, "alice", "meeting over")},
		{Name: "channel op over REST (no session)", Setup: started, Cmd: AVOperatorEnd{CallID: "C1", DID: didAlice},
			Want: fsm.Result{Code: fsm.OK}, Events: []fsm.EventKind{EvAVEnded}, Check: ended(didAlice, "alice", avOperatorReason)},
		{Name: "guest channel op", Setup: guestOp, Cmd: AVOperatorEnd{CallID: "C1", Session: "s-guest"},
			Want: fsm.Result{Code: fsm.OK}, Events: []fsm.EventKind{EvAVEnded}, Check: ended("", "guest", avOperatorReason)},
		{Name: "DID op not in the channel", Setup: bobDIDOp, Cmd: AVOperatorEnd{CallID: "C1", DID: didBob},
			Want: fsm.Result{Code: fsm.OK}, Events: []fsm.EventKind{EvAVEnded}},
		{Name: "server operator session", Setup: started, Cmd: AVOperatorEnd{CallID: "C1", Session: "s-oper"},
			Want: fsm.Result{Code: fsm.OK}, Events: []fsm.EventKind{EvAVEnded}},
		{Name: "configured operator DID", Setup: started, Cmd: AVOperatorEnd{CallID: "C1", DID: didCarol, ServerOper: true},
			Want: fsm.Result{Code: fsm.OK}, Events: []fsm.EventKind{EvAVEnded}, Check: ended(didCarol, "", avOperatorReason)},
		{Name: "the starter is no operator", Setup: started, Cmd: AVOperatorEnd{CallID: "C1", DID: didBob, Session: "s-bob"},
			Want: fsm.Result{Code: ErrAVNotOperator}, Check: live},
		{Name: "guest, not op", Setup: started, Cmd: AVOperatorEnd{CallID: "C1", Session: "s-guest"},
			Want: fsm.Result{Code: ErrAVNotOperator}, Check: live},
		{Name: "server-operator flag without a DID", Setup: started, Cmd: AVOperatorEnd{CallID: "C1", Session: "s-guest", ServerOper: true},
			Want: fsm.Result{Code: ErrAVNotOperator}, Check: live},
		{Name: "another account's op session", Setup: started, Cmd: AVOperatorEnd{CallID: "C1", DID: didBob, Session: "s-alice"},
			Want: fsm.Result{Code: ErrAVNotOperator}, Check: live},
		{Name: "unknown call", Setup: started, Cmd: AVOperatorEnd{CallID: "C9", DID: didAlice}, Want: fsm.Result{Code: ErrAVNoCall}},
		{Name: "ended call", Setup: fsmtest.With(started, AVEnd{CallID: "C1"}), Cmd: AVOperatorEnd{CallID: "C1", DID: didAlice},
			Want: fsm.Result{Code: ErrAVNoCall}},
		{Name: "nobody", Setup: started, Cmd: AVOperatorEnd{CallID: "C1"}, Want: fsm.Result{Code: fsm.ErrInvalid}, Check: live},
		{Name: "no call id", Setup: started, Cmd: AVOperatorEnd{DID: didAlice}, Want: fsm.Result{Code: fsm.ErrInvalid}, Check: live},
		{Name: "long reason clipped", Setup: started, Cmd: AVOperatorEnd{CallID: "C1", DID: didAlice, Reason: strings.Repeat("x", MaxAVReason+5)},
			Want: fsm.Result{Code: fsm.OK}, Events: []fsm.EventKind{EvAVEnded}, Check: ended(didAlice, "alice", strings.Repeat("x", MaxAVReason))},
	}
	fsmtest.RunCases(t, cases)

	h := fsmtest.NewHarness(t)
	h.OK(guestOp...)
	h.Read(func(st *fsm.State) {
		for _, tc := range []struct {
			did, session string
			want         bool
		}{
			{didAlice, "", true}, {"", "s-alice", true}, {didBob, "s-bob", false}, {"", "s-guest", true},
			{"", "s-oper", true}, {didCarol, "", false}, {"", "", false}, {didBob, "s-alice", false},
		} {
			if got := Of(st).MayEnd("#c", tc.did, tc.session); got != tc.want {
				t.Errorf("may end %q %q: %v, want %v", tc.did, tc.session, got, tc.want)
			}
		}
		if Of(st).MayEnd("#none", didAlice, "s-alice") {
			t.Error("a channel op ends calls of a channel that does not exist")
		}
	})
}
