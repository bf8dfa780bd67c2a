package fsm

import (
	"strings"
	"testing"
)

func TestAVCommands(t *testing.T) {
	inChan := with(world(), Join{Session: "s-alice", Channel: "#c"}, Join{Session: "s-bob", Channel: "#c"},
		Join{Session: "s-guest", Channel: "#c"})
	started := with(inChan, AVStart{CallID: "C1", Channel: "#c", Node: "n1", DID: didAlice})
	joined := with(started, AVJoin{CallID: "C1", DID: didAlice}, AVJoin{CallID: "C1", DID: didBob})
	banned := with(joined, Mode{Session: "s-alice", Channel: "#c", Changes: []ModeChange{{Add: true, Mode: "b", Arg: "bob!*@*"}}})
	liveCount := func(want int) func(t *testing.T, st *State, _ int64) {
		return func(t *testing.T, st *State, _ int64) {
			c, ok := st.AVActive("#c")
			if !ok || c.LiveParticipants() != want {
				t.Fatalf("active %+v %v, want %d live", c, ok, want)
			}
		}
	}
	ended := func(reason string) func(t *testing.T, st *State, at int64) {
		return func(t *testing.T, st *State, at int64) {
			if _, ok := st.AVActive("#c"); ok {
				t.Fatal("still active")
			}
			c, ok := st.AVCall("C1")
			if !ok || c.EndedAt != at || c.EndReason != reason || c.LiveParticipants() != 0 {
				t.Fatalf("call %+v", c)
			}
			if r := st.AVRecent("#c", 10); len(r) != 1 || r[0].ID != "C1" {
				t.Fatalf("recent %+v", r)
			}
		}
	}
	cases := []applyCase{
		{name: "start", setup: inChan, cmd: AVStart{CallID: "C1", Channel: "#c", Node: "n1", DID: didAlice},
			want: Result{Code: OK}, events: []EventKind{EvAVStarted},
			check: func(t *testing.T, st *State, at int64) {
				c, ok := st.AVActive("#c")
				if !ok || c.ID != "C1" || c.Host != "n1" || c.CreatedAt != at || c.CreatedByNick != "alice" || c.LiveParticipants() != 0 {
					t.Fatalf("%+v", c)
				}
			}},
		{name: "start while active", setup: started, cmd: AVStart{CallID: "C2", Channel: "#c", Node: "n1", DID: didBob}, want: Result{Code: ErrAVActive}},
		{name: "start reusing an id", setup: started, cmd: AVStart{CallID: "C1", Channel: "#c", Node: "n1", DID: didBob}, want: Result{Code: ErrInvalid}},
		{name: "start without node", setup: inChan, cmd: AVStart{CallID: "C1", Channel: "#c", DID: didAlice}, want: Result{Code: ErrInvalid}},
		{name: "start by a guest", setup: inChan, cmd: AVStart{CallID: "C1", Channel: "#c", Node: "n1"}, want: Result{Code: ErrAVNeedsAccount}},
		{name: "start by a non-member", setup: world(), cmd: AVStart{CallID: "C1", Channel: "#c", Node: "n1", DID: didAlice}, want: Result{Code: ErrNoSuchChannel}},
		{name: "start outside the channel", setup: with(world(), Join{Session: "s-bob", Channel: "#c"}),
			cmd: AVStart{CallID: "C1", Channel: "#c", Node: "n1", DID: didAlice}, want: Result{Code: ErrNotOnChannel}},
		{name: "join", setup: started, cmd: AVJoin{CallID: "C1", DID: didBob}, want: Result{Code: OK},
			events: []EventKind{EvAVJoined}, check: liveCount(1)},
		{name: "join twice", setup: joined, cmd: AVJoin{CallID: "C1", DID: didBob}, want: Result{Code: NoChange}},
		{name: "join unknown call", setup: started, cmd: AVJoin{CallID: "C9", DID: didBob}, want: Result{Code: ErrAVNoCall}},
		{name: "join banned", setup: banned, cmd: AVJoin{CallID: "C1", DID: didBob}, want: Result{Code: ErrBanned}},
		{name: "join after leaving, banned", setup: with(banned, AVLeave{CallID: "C1", DID: didBob}),
			cmd: AVJoin{CallID: "C1", DID: didBob}, want: Result{Code: ErrBanned}},
		{name: "join not in channel", setup: with(started, Part{Session: "s-bob", Channel: "#c"}),
			cmd: AVJoin{CallID: "C1", DID: didBob}, want: Result{Code: ErrNotOnChannel}},
		{name: "rejoin after leaving", setup: with(joined, AVLeave{CallID: "C1", DID: didBob}),
			cmd: AVJoin{CallID: "C1", DID: didBob}, want: Result{Code: OK}, events: []EventKind{EvAVJoined},
			check: func(t *testing.T, st *State, at int64) {
				c, _ := st.AVActive("#c")
				if len(c.Participants) != 2 || c.Participants[1].LeftAt != 0 || c.Participants[1].JoinedAt != at {
					t.Fatalf("%+v", c.Participants)
				}
			}},
		{name: "leave", setup: joined, cmd: AVLeave{CallID: "C1", DID: didBob, Reason: "parted"}, want: Result{Code: OK},
			events: []EventKind{EvAVLeft}, check: liveCount(1)},
		{name: "leave not in call", setup: started, cmd: AVLeave{CallID: "C1", DID: didBob}, want: Result{Code: NoChange}},
		{name: "last leave ends", setup: with(joined, AVLeave{CallID: "C1", DID: didAlice}),
			cmd: AVLeave{CallID: "C1", DID: didBob}, want: Result{Code: OK}, events: []EventKind{EvAVLeft, EvAVEnded},
			check: ended("everyone left")},
		{name: "end", setup: joined, cmd: AVEnd{CallID: "C1", By: didAlice, Reason: "done"}, want: Result{Code: OK},
			events: []EventKind{EvAVEnded}, check: ended("done")},
		{name: "end ended", setup: with(joined, AVEnd{CallID: "C1"}), cmd: AVEnd{CallID: "C1"}, want: Result{Code: ErrAVNoCall}},
		{name: "end node", setup: joined, cmd: AVEndNode{Node: "n1", Reason: "host gone"}, want: Result{Code: OK, Count: 1},
			events: []EventKind{EvAVEnded}, check: ended("host gone")},
		{name: "end other node", setup: joined, cmd: AVEndNode{Node: "n2", Reason: "x"}, want: Result{Code: NoChange}, check: liveCount(2)},
		{name: "end node without calls", setup: world(), cmd: AVEndNode{Node: "n1", Reason: "x"}, want: Result{Code: NoChange}},
		{name: "end node unnamed", setup: joined, cmd: AVEndNode{Reason: "x"}, want: Result{Code: ErrInvalid}},
		{name: "new call after the end", setup: with(joined, AVEnd{CallID: "C1"}),
			cmd: AVStart{CallID: "C2", Channel: "#c", Node: "n2", DID: didBob}, want: Result{Code: OK}, events: []EventKind{EvAVStarted}},
	}
	runApplyCases(t, cases)
}

func TestAVEligibleAndBounds(t *testing.T) {
	h := newHarness(t)
	h.mustOK(with(world(), Join{Session: "s-alice", Channel: "#c"}, Join{Session: "s-bob", Channel: "#c"},
		AVStart{CallID: "C0", Channel: "#c", Node: "n1", DID: didAlice})...)
	h.read(func(st *State) {
		for _, tc := range []struct {
			did  string
			want Code
		}{{didAlice, OK}, {didBob, OK}, {didCarol, ErrNotOnChannel}, {"", ErrAVNeedsAccount}} {
			if got := st.AVEligible("#c", tc.did); got != tc.want {
				t.Errorf("eligible %q: %v, want %v", tc.did, got, tc.want)
			}
		}
		if got := st.AVEligible("#none", didAlice); got != ErrNoSuchChannel {
			t.Errorf("no channel: %v", got)
		}
	})
	// Ended calls are kept up to MaxRecentAVCalls, oldest forgotten first.
	h.mustOK(AVEnd{CallID: "C0"})
	for i := 1; i <= MaxRecentAVCalls; i++ {
		id := "C" + string(rune('A'+i%26)) + itoa(i)
		h.mustOK(AVStart{CallID: id, Channel: "#c", Node: "n1", DID: didAlice}, AVEnd{CallID: id})
	}
	h.read(func(st *State) {
		if _, ok := st.AVCall("C0"); ok {
			t.Error("the oldest ended call is still kept")
		}
		if got := len(st.AVRecent("", 2*MaxRecentAVCalls)); got != MaxRecentAVCalls {
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
	inChan := with(world(), Join{Session: "s-alice", Channel: "#c"}, Join{Session: "s-bob", Channel: "#c"},
		Join{Session: "s-guest", Channel: "#c"})
	started := with(inChan, AVStart{CallID: "C1", Channel: "#c", Node: "n1", DID: didAlice})
	add := func(id string) AVAddArtifact {
		return AVAddArtifact{CallID: "C1", ArtifactID: id, DID: didBob, Kind: "recording", URL: "https://example.com/" + id, Title: "Rec"}
	}
	withOne := with(started, add("A0"))
	full := started
	for i := range MaxAVArtifacts {
		full = with(full, add("A"+itoa(i)))
	}
	artifacts := func(want int) func(t *testing.T, st *State, at int64) {
		return func(t *testing.T, st *State, at int64) {
			c, ok := st.AVCall("C1")
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
	cases := []applyCase{
		{name: "add", setup: started, cmd: add("A1"), want: Result{Code: OK}, check: artifacts(1)},
		{name: "add a second", setup: withOne, cmd: add("A1"), want: Result{Code: OK}, check: artifacts(2)},
		{name: "add to an ended call", setup: with(withOne, AVEnd{CallID: "C1", Reason: "done"}), cmd: add("A1"),
			want: Result{Code: OK}, check: artifacts(2)},
		{name: "add without title", setup: started, cmd: bad(func(c *AVAddArtifact) { c.Title = "" }), want: Result{Code: OK}},
		{name: "every kind", setup: started, cmd: bad(func(c *AVAddArtifact) { c.Kind = "link"; c.URL = "HTTP://Example.com" }), want: Result{Code: OK}},
		{name: "unknown call", setup: started, cmd: bad(func(c *AVAddArtifact) { c.CallID = "C9" }), want: Result{Code: ErrAVNoCall}},
		{name: "no calls at all", setup: inChan, cmd: add("A1"), want: Result{Code: ErrAVNoCall}},
		{name: "guest", setup: started, cmd: bad(func(c *AVAddArtifact) { c.DID = "" }), want: Result{Code: ErrAVNeedsAccount}},
		{name: "non-member", setup: started, cmd: bad(func(c *AVAddArtifact) { c.DID = didCarol }), want: Result{Code: ErrNotOnChannel}},
		{name: "left the channel", setup: with(started, Part{Session: "s-bob", Channel: "#c"}), cmd: add("A1"), want: Result{Code: ErrNotOnChannel}},
		{name: "banned", setup: with(started, Mode{Session: "s-alice", Channel: "#c", Changes: []ModeChange{{Add: true, Mode: "b", Arg: "bob!*@*"}}}),
			cmd: add("A1"), want: Result{Code: ErrBanned}},
		{name: "duplicate id", setup: withOne, cmd: add("A0"), want: Result{Code: ErrInvalid}},
		{name: "no id", setup: started, cmd: bad(func(c *AVAddArtifact) { c.ArtifactID = "" }), want: Result{Code: ErrInvalid}},
		{name: "unknown kind", setup: started, cmd: bad(func(c *AVAddArtifact) { c.Kind = "video" }), want: Result{Code: ErrInvalid}},
		{name: "ftp url", setup: started, cmd: bad(func(c *AVAddArtifact) { c.URL = "ftp://example.com/x" }), want: Result{Code: ErrInvalid}},
		{name: "url without host", setup: started, cmd: bad(func(c *AVAddArtifact) { c.URL = "https:///x" }), want: Result{Code: ErrInvalid}},
		{name: "url with a space", setup: started, cmd: bad(func(c *AVAddArtifact) { c.URL = "https://example.com/a b" }), want: Result{Code: ErrInvalid}},
		{name: "url too long", setup: started, cmd: bad(func(c *AVAddArtifact) { c.URL = "https://example.com/" + strings.Repeat("x", MaxAVArtifactURL) }),
			want: Result{Code: ErrInvalid}},
		{name: "url at the limit", setup: started, cmd: bad(func(c *AVAddArtifact) {
			c.URL = "https://example.com/" + strings.Repeat("x", MaxAVArtifactURL-len("https://example.com/"))
		}), want: Result{Code: OK}},
		{name: "title too long", setup: started, cmd: bad(func(c *AVAddArtifact) { c.Title = strings.Repeat("é", MaxAVArtifactTitle/2+1) }),
			want: Result{Code: ErrInvalid}},
		{name: "title with a newline", setup: started, cmd: bad(func(c *AVAddArtifact) { c.Title = "a\nb" }), want: Result{Code: ErrInvalid}},
		{name: "full", setup: full, cmd: add("A-more"), want: Result{Code: ErrAVArtifactsFull}},
	}
	runApplyCases(t, cases)
}
