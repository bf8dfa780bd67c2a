package av

import (
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

func TestAVCommands(t *testing.T) {
	inChan := fsmtest.With(fsmtest.World(didAlice, didBob), fsm.Join{Session: "s-alice", Channel: "#c"}, fsm.Join{Session: "s-bob", Channel: "#c"},
		fsm.Join{Session: "s-guest", Channel: "#c"})
	started := fsmtest.With(inChan, AVStart{CallID: "C1", Channel: "#c", Node: "n1", DID: didAlice})
	joined := fsmtest.With(started, AVJoin{CallID: "C1", DID: didAlice}, AVJoin{CallID: "C1", DID: didBob})
	banned := fsmtest.With(joined, fsm.Mode{Session: "s-alice", Channel: "#c", Changes: []fsm.ModeChange{{Add: true, Mode: "b", Arg: "bob!*@*"}}})
	liveCount := func(want int) func(t *testing.T, st *fsm.State, _ int64) {
		return func(t *testing.T, st *fsm.State, _ int64) {
			c, ok := Of(st).Active("#c")
			if !ok || c.LiveParticipants() != want {
				t.Fatalf("active %+v %v, want %d live", c, ok, want)
			}
		}
	}
	ended := func(reason string) func(t *testing.T, st *fsm.State, at int64) {
		return func(t *testing.T, st *fsm.State, at int64) {
			if _, ok := Of(st).Active("#c"); ok {
				t.Fatal("still active")
			}
			c, ok := Of(st).Call("C1")
			if !ok || c.EndedAt != at || c.EndReason != reason || c.LiveParticipants() != 0 {
				t.Fatalf("call %+v", c)
			}
			if r := Of(st).Recent("#c", 10); len(r) != 1 || r[0].ID != "C1" {
				t.Fatalf("recent %+v", r)
			}
		}
	}
	cases := []fsmtest.Case{
		{Name: "start", Setup: inChan, Cmd: AVStart{CallID: "C1", Channel: "#c", Node: "n1", DID: didAlice},
			Want: fsm.Result{Code: fsm.OK}, Events: []fsm.EventKind{EvAVStarted},
			Check: func(t *testing.T, st *fsm.State, at int64) {
				c, ok := Of(st).Active("#c")
				if !ok || c.ID != "C1" || c.Host != "n1" || c.CreatedAt != at || c.CreatedByNick != "alice" || c.LiveParticipants() != 0 {
					t.Fatalf("%+v", c)
				}
			}},
		{Name: "start while active", Setup: started, Cmd: AVStart{CallID: "C2", Channel: "#c", Node: "n1", DID: didBob}, Want: fsm.Result{Code: ErrAVActive}},
		{Name: "start reusing an id", Setup: started, Cmd: AVStart{CallID: "C1", Channel: "#c", Node: "n1", DID: didBob}, Want: fsm.Result{Code: fsm.ErrInvalid}},
		{Name: "start without node", Setup: inChan, Cmd: AVStart{CallID: "C1", Channel: "#c", DID: didAlice}, Want: fsm.Result{Code: fsm.ErrInvalid}},
		{Name: "start by a guest", Setup: inChan, Cmd: AVStart{CallID: "C1", Channel: "#c", Node: "n1"}, Want: fsm.Result{Code: ErrAVNeedsAccount}},
		{Name: "start by a non-member", Setup: fsmtest.World(didAlice, didBob), Cmd: AVStart{CallID: "C1", Channel: "#c", Node: "n1", DID: didAlice}, Want: fsm.Result{Code: fsm.ErrNoSuchChannel}},
		{Name: "start outside the channel", Setup: fsmtest.With(fsmtest.World(didAlice, didBob), fsm.Join{Session: "s-bob", Channel: "#c"}),
			Cmd: AVStart{CallID: "C1", Channel: "#c", Node: "n1", DID: didAlice}, Want: fsm.Result{Code: fsm.ErrNotOnChannel}},
		{Name: "join", Setup: started, Cmd: AVJoin{CallID: "C1", DID: didBob}, Want: fsm.Result{Code: fsm.OK},
			Events: []fsm.EventKind{EvAVJoined}, Check: liveCount(1)},
		{Name: "join twice", Setup: joined, Cmd: AVJoin{CallID: "C1", DID: didBob}, Want: fsm.Result{Code: fsm.NoChange}},
		{Name: "join unknown call", Setup: started, Cmd: AVJoin{CallID: "C9", DID: didBob}, Want: fsm.Result{Code: ErrAVNoCall}},
		{Name: "join banned", Setup: banned, Cmd: AVJoin{CallID: "C1", DID: didBob}, Want: fsm.Result{Code: fsm.ErrBanned}},
		{Name: "join after leaving, banned", Setup: fsmtest.With(banned, AVLeave{CallID: "C1", DID: didBob}),
			Cmd: AVJoin{CallID: "C1", DID: didBob}, Want: fsm.Result{Code: fsm.ErrBanned}},
		{Name: "join not in channel", Setup: fsmtest.With(started, fsm.Part{Session: "s-bob", Channel: "#c"}),
			Cmd: AVJoin{CallID: "C1", DID: didBob}, Want: fsm.Result{Code: fsm.ErrNotOnChannel}},
		{Name: "rejoin after leaving", Setup: fsmtest.With(joined, AVLeave{CallID: "C1", DID: didBob}),
			Cmd: AVJoin{CallID: "C1", DID: didBob}, Want: fsm.Result{Code: fsm.OK}, Events: []fsm.EventKind{EvAVJoined},
			Check: func(t *testing.T, st *fsm.State, at int64) {
				c, _ := Of(st).Active("#c")
				if len(c.Participants) != 2 || c.Participants[1].LeftAt != 0 || c.Participants[1].JoinedAt != at {
					t.Fatalf("%+v", c.Participants)
				}
			}},
		{Name: "leave", Setup: joined, Cmd: AVLeave{CallID: "C1", DID: didBob, Reason: "parted"}, Want: fsm.Result{Code: fsm.OK},
			Events: []fsm.EventKind{EvAVLeft}, Check: liveCount(1)},
		{Name: "leave not in call", Setup: started, Cmd: AVLeave{CallID: "C1", DID: didBob}, Want: fsm.Result{Code: fsm.NoChange}},
		{Name: "last leave ends", Setup: fsmtest.With(joined, AVLeave{CallID: "C1", DID: didAlice}),
			Cmd: AVLeave{CallID: "C1", DID: didBob}, Want: fsm.Result{Code: fsm.OK}, Events: []fsm.EventKind{EvAVLeft, EvAVEnded},
			Check: ended("everyone left")},
		{Name: "end", Setup: joined, Cmd: AVEnd{CallID: "C1", By: didAlice, Reason: "done"}, Want: fsm.Result{Code: fsm.OK},
			Events: []fsm.EventKind{EvAVEnded}, Check: ended("done")},
		{Name: "end ended", Setup: fsmtest.With(joined, AVEnd{CallID: "C1"}), Cmd: AVEnd{CallID: "C1"}, Want: fsm.Result{Code: ErrAVNoCall}},
		{Name: "end node", Setup: joined, Cmd: AVEndNode{Node: "n1", Reason: "host gone"}, Want: fsm.Result{Code: fsm.OK, Count: 1},
			Events: []fsm.EventKind{EvAVEnded}, Check: ended("host gone")},
		{Name: "end other node", Setup: joined, Cmd: AVEndNode{Node: "n2", Reason: "x"}, Want: fsm.Result{Code: fsm.NoChange}, Check: liveCount(2)},
		{Name: "end node without calls", Setup: fsmtest.World(didAlice, didBob), Cmd: AVEndNode{Node: "n1", Reason: "x"}, Want: fsm.Result{Code: fsm.NoChange}},
		{Name: "end node unnamed", Setup: joined, Cmd: AVEndNode{Reason: "x"}, Want: fsm.Result{Code: fsm.ErrInvalid}},
		{Name: "new call after the end", Setup: fsmtest.With(joined, AVEnd{CallID: "C1"}),
			Cmd: AVStart{CallID: "C2", Channel: "#c", Node: "n2", DID: didBob}, Want: fsm.Result{Code: fsm.OK}, Events: []fsm.EventKind{EvAVStarted}},
	}
	fsmtest.RunCases(t, cases)
}

func TestAVEligibleAndBounds(t *testing.T) {
	h := fsmtest.NewHarness(t)
	h.OK(fsmtest.With(fsmtest.World(didAlice, didBob), fsm.Join{Session: "s-alice", Channel: "#c"}, fsm.Join{Session: "s-bob", Channel: "#c"},
		AVStart{CallID: "C0", Channel: "#c", Node: "n1", DID: didAlice})...)
	h.Read(func(st *fsm.State) {
		for _, tc := range []struct {
			did  string
			want fsm.Code
		}{{didAlice, fsm.OK}, {didBob, fsm.OK}, {didCarol, fsm.ErrNotOnChannel}, {"", ErrAVNeedsAccount}} {
			if got := Of(st).Eligible("#c", tc.did); got != tc.want {
				t.Errorf("eligible %q: %v, want %v", tc.did, got, tc.want)
			}
		}
		if got := Of(st).Eligible("#none", didAlice); got != fsm.ErrNoSuchChannel {
			t.Errorf("no channel: %v", got)
		}
	})
	// Ended calls are kept up to MaxRecentAVCalls, oldest forgotten first.
	h.OK(AVEnd{CallID: "C0"})
	for i := 1; i <= MaxRecentAVCalls; i++ {
		id := "C" + string(rune('A'+i%26)) + itoa(i)
		h.OK(AVStart{CallID: id, Channel: "#c", Node: "n1", DID: didAlice}, AVEnd{CallID: id})
	}
	h.Read(func(st *fsm.State) {
		if _, ok := Of(st).Call("C0"); ok {
			t.Error("the oldest ended call is still kept")
		}
		if got := len(Of(st).Recent("", 2*MaxRecentAVCalls)); got != MaxRecentAVCalls {
			t.Errorf("recent %d, want %d", got, MaxRecentAVCalls)
		}
	})
	if got := clip("héllo", 2); got != "h" {
		t.Errorf("clip %q", got)
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	s := ""
	for ; i > 0; i /= 10 {
		s = string(rune('0'+i%10)) + s
	}
	return s
}

func TestAVAddArtifact(t *testing.T) {
	inChan := fsmtest.With(fsmtest.World(didAlice, didBob), fsm.Join{Session: "s-alice", Channel: "#c"}, fsm.Join{Session: "s-bob", Channel: "#c"},
		fsm.Join{Session: "s-guest", Channel: "#c"})
	started := fsmtest.With(inChan, AVStart{CallID: "C1", Channel: "#c", Node: "n1", DID: didAlice})
	add := func(id string) AVAddArtifact {
		return AVAddArtifact{CallID: "C1", ArtifactID: id, DID: didBob, Kind: "recording", URL: "https://example.com/" + id, Title: "Rec"}
	}
	withOne := fsmtest.With(started, add("A0"))
	full := started
	for i := range MaxAVArtifacts {
		full = fsmtest.With(full, add("A"+itoa(i)))
	}
	artifacts := func(want int) func(t *testing.T, st *fsm.State, at int64) {
		return func(t *testing.T, st *fsm.State, at int64) {
			c, ok := Of(st).Call("C1")
			if !ok || len(c.Artifacts) != want {
				t.Fatalf("call %+v %v, want %d artifacts", c, ok, want)
			}
			last := c.Artifacts[want-1]
			if last.AddedAt != at || last.AddedBy != didBob || last.AddedNick != "bob" || last.Kind != "recording" {
				t.Fatalf("artifact %+v", last)
			}
		}
	}
	bad := func(f func(*AVAddArtifact)) AVAddArtifact { c := add("A1"); f(&c); return c }
	cases := []fsmtest.Case{
		{Name: "add", Setup: started, Cmd: add("A1"), Want: fsm.Result{Code: fsm.OK}, Check: artifacts(1)},
		{Name: "add a second", Setup: withOne, Cmd: add("A1"), Want: fsm.Result{Code: fsm.OK}, Check: artifacts(2)},
		{Name: "add to an ended call", Setup: fsmtest.With(withOne, AVEnd{CallID: "C1", Reason: "done"}), Cmd: add("A1"),
			Want: fsm.Result{Code: fsm.OK}, Check: artifacts(2)},
		{Name: "add without title", Setup: started, Cmd: bad(func(c *AVAddArtifact) { c.Title = "" }), Want: fsm.Result{Code: fsm.OK}},
		{Name: "every kind", Setup: started, Cmd: bad(func(c *AVAddArtifact) { c.Kind = "link"; c.URL = "HTTP://Example.com" }), Want: fsm.Result{Code: fsm.OK}},
		{Name: "unknown call", Setup: started, Cmd: bad(func(c *AVAddArtifact) { c.CallID = "C9" }), Want: fsm.Result{Code: ErrAVNoCall}},
		{Name: "no calls at all", Setup: inChan, Cmd: add("A1"), Want: fsm.Result{Code: ErrAVNoCall}},
		{Name: "guest", Setup: started, Cmd: bad(func(c *AVAddArtifact) { c.DID = "" }), Want: fsm.Result{Code: ErrAVNeedsAccount}},
		{Name: "non-member", Setup: started, Cmd: bad(func(c *AVAddArtifact) { c.DID = didCarol }), Want: fsm.Result{Code: fsm.ErrNotOnChannel}},
		{Name: "left the channel", Setup: fsmtest.With(started, fsm.Part{Session: "s-bob", Channel: "#c"}), Cmd: add("A1"), Want: fsm.Result{Code: fsm.ErrNotOnChannel}},
		{Name: "banned", Setup: fsmtest.With(started, fsm.Mode{Session: "s-alice", Channel: "#c", Changes: []fsm.ModeChange{{Add: true, Mode: "b", Arg: "bob!*@*"}}}),
			Cmd: add("A1"), Want: fsm.Result{Code: fsm.ErrBanned}},
		{Name: "duplicate id", Setup: withOne, Cmd: add("A0"), Want: fsm.Result{Code: fsm.ErrInvalid}},
		{Name: "no id", Setup: started, Cmd: bad(func(c *AVAddArtifact) { c.ArtifactID = "" }), Want: fsm.Result{Code: fsm.ErrInvalid}},
		{Name: "unknown kind", Setup: started, Cmd: bad(func(c *AVAddArtifact) { c.Kind = "video" }), Want: fsm.Result{Code: fsm.ErrInvalid}},
		{Name: "ftp url", Setup: started, Cmd: bad(func(c *AVAddArtifact) { c.URL = "ftp://example.com/x" }), Want: fsm.Result{Code: fsm.ErrInvalid}},
		{Name: "url without host", Setup: started, Cmd: bad(func(c *AVAddArtifact) { c.URL = "https:///x" }), Want: fsm.Result{Code: fsm.ErrInvalid}},
		{Name: "url with a space", Setup: started, Cmd: bad(func(c *AVAddArtifact) { c.URL = "https://example.com/a b" }), Want: fsm.Result{Code: fsm.ErrInvalid}},
		{Name: "url too long", Setup: started, Cmd: bad(func(c *AVAddArtifact) { c.URL = "https://example.com/" + strings.Repeat("x", MaxAVArtifactURL) }),
			Want: fsm.Result{Code: fsm.ErrInvalid}},
		{Name: "url at the limit", Setup: started, Cmd: bad(func(c *AVAddArtifact) {
			c.URL = "https://example.com/" + strings.Repeat("x", MaxAVArtifactURL-len("https://example.com/"))
		}), Want: fsm.Result{Code: fsm.OK}},
		{Name: "title too long", Setup: started, Cmd: bad(func(c *AVAddArtifact) { c.Title = strings.Repeat("é", MaxAVArtifactTitle/2+1) }),
			Want: fsm.Result{Code: fsm.ErrInvalid}},
		{Name: "title with a newline", Setup: started, Cmd: bad(func(c *AVAddArtifact) { c.Title = "a\nb" }), Want: fsm.Result{Code: fsm.ErrInvalid}},
		{Name: "full", Setup: full, Cmd: add("A-more"), Want: fsm.Result{Code: ErrAVArtifactsFull}},
	}
	fsmtest.RunCases(t, cases)
}
