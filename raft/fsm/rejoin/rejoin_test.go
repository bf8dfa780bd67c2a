package rejoin

import (
	"fmt"
	"slices"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

const (
	didAlice = "did:plc:alice"
	didBob   = "did:plc:bob"
	hour     = int64(3_600_000)
)

// remembered reads the DID's entry, failing the test when it is not followed.
func remembered(t *testing.T, st *fsm.State, did string) []string {
	t.Helper()
	chans, _, ok := Of(st).Followed(did)
	if !ok {
		t.Fatalf("%s is not followed", did)
	}
	return chans
}

func wantRemembered(t *testing.T, st *fsm.State, did string, want ...string) {
	t.Helper()
	if got := remembered(t, st, did); !slices.Equal(got, want) {
		t.Errorf("remembered for %s: %q, want %q", did, got, want)
	}
}

// TestClaim: what a Claim answers and what it leaves, from the states a login meets.
func TestClaim(t *testing.T) {
	world := fsmtest.World(didAlice, didBob)
	// alice is followed and her first session ended in #a and #b; a2 is her new session.
	ended := fsmtest.With(world, Claim{Session: "s-alice", MaxAge: hour},
		fsm.Join{Session: "s-alice", Channel: "#a"}, fsm.Join{Session: "s-alice", Channel: "#b"},
		fsm.EndSession{Session: "s-alice"}, fsmtest.Session("s-a2", "alice2", didAlice))
	fsmtest.RunCases(t, []fsmtest.Case{
		{
			Name: "a first claim follows the account and joins nothing", Setup: world,
			Cmd: Claim{Session: "s-alice", MaxAge: hour}, Want: fsm.Result{Code: fsm.OK},
			Check: func(t *testing.T, st *fsm.State, at int64) {
				if chans, when, ok := Of(st).Followed(didAlice); !ok || len(chans) != 0 || when != at {
					t.Errorf("followed %v at %d (%v), want none at %d", chans, when, ok, at)
				}
			},
		},
		{Name: "a guest has no account", Setup: world, Cmd: Claim{Session: "s-guest", MaxAge: hour}, Want: fsm.Result{Code: fsm.ErrInvalid}},
		{Name: "no such session", Setup: world, Cmd: Claim{Session: "s-x", MaxAge: hour}, Want: fsm.Result{Code: fsm.ErrNoSuchSession}},
		{Name: "a max age is positive", Setup: world, Cmd: Claim{Session: "s-alice"}, Want: fsm.Result{Code: fsm.ErrInvalid}},
		{
			Name: "the channels of the ended session come back, once", Setup: ended,
			Cmd: Claim{Session: "s-a2", MaxAge: hour}, Want: fsm.Result{Code: fsm.OK, List: []string{"#a", "#b"}},
			Check: func(t *testing.T, st *fsm.State, _ int64) { wantRemembered(t, st, didAlice) },
		},
		{
			Name: "remembered channels older than the max age are not rejoined", Setup: ended,
			Cmd: Claim{Session: "s-a2", MaxAge: 1000}, Want: fsm.Result{Code: fsm.OK},
		},
		{
			Name: "a part forgets the channel", Setup: fsmtest.With(ended, fsm.Join{Session: "s-a2", Channel: "#a"}, fsm.Part{Session: "s-a2", Channel: "#a"}),
			Cmd: Claim{Session: "s-a2", MaxAge: hour}, Want: fsm.Result{Code: fsm.OK, List: []string{"#b"}},
		},
		{
			Name: "a kick forgets the channel", Setup: fsmtest.With(ended,
				fsm.Join{Session: "s-a2", Channel: "#b"}, fsm.Kick{Session: "s-oper", Channel: "#b", Target: "s-a2"}),
			Cmd: Claim{Session: "s-a2", MaxAge: hour}, Want: fsm.Result{Code: fsm.OK, List: []string{"#a"}},
		},
		{
			Name: "a rename is followed", Setup: fsmtest.With(ended,
				fsm.RenameChannel{Session: "s-oper", Channel: "#a", NewName: "#z"}),
			Cmd: Claim{Session: "s-a2", MaxAge: hour}, Want: fsm.Result{Code: fsm.OK, List: []string{"#b", "#z"}},
		},
		{
			Name: "the channels of another live session count, less those already joined",
			Setup: fsmtest.With(world, Claim{Session: "s-alice", MaxAge: hour}, fsm.Join{Session: "s-alice", Channel: "#c"},
				fsm.Join{Session: "s-alice", Channel: "#d"}, fsmtest.Session("s-a2", "alice2", didAlice), fsm.Join{Session: "s-a2", Channel: "#d"}),
			Cmd: Claim{Session: "s-a2", MaxAge: hour}, Want: fsm.Result{Code: fsm.OK, List: []string{"#c"}},
		},
		{
			Name: "an account never claimed is not followed", Setup: fsmtest.With(world, fsm.Join{Session: "s-bob", Channel: "#a"}, fsm.EndSession{Session: "s-bob"}),
			Cmd: Claim{Session: "s-alice", MaxAge: hour}, Want: fsm.Result{Code: fsm.OK},
			Check: func(t *testing.T, st *fsm.State, _ int64) {
				if _, _, ok := Of(st).Followed(didBob); ok {
					t.Error("bob is followed")
				}
			},
		},
		{
			Name: "an old entry without a session is dropped, one with a session kept",
			Setup: fsmtest.With(world, Claim{Session: "s-bob", MaxAge: hour}, fsm.EndSession{Session: "s-bob"},
				fsmtest.Session("s-c", "carol", "did:plc:carol"), Claim{Session: "s-c", MaxAge: hour}),
			Cmd: Claim{Session: "s-alice", MaxAge: 1500}, Want: fsm.Result{Code: fsm.OK},
			Check: func(t *testing.T, st *fsm.State, _ int64) {
				_, _, bob := Of(st).Followed(didBob)
				_, _, carol := Of(st).Followed("did:plc:carol")
				if bob || !carol || Of(st).Accounts() != 2 {
					t.Errorf("bob followed %v, carol %v, %d accounts", bob, carol, Of(st).Accounts())
				}
			},
		},
		{
			Name: "a purged node's sessions are remembered", Setup: fsmtest.With(world, Claim{Session: "s-alice", MaxAge: hour},
				fsm.Join{Session: "s-alice", Channel: "#p"}),
			Cmd: fsm.PurgeNode{Node: fsmtest.Node, Reason: "gone"}, Want: fsm.Result{Code: fsm.OK, Count: 4},
			Events: []fsm.EventKind{fsm.EvQuit, fsm.EvQuit, fsm.EvQuit, fsm.EvQuit},
			Check:  func(t *testing.T, st *fsm.State, _ int64) { wantRemembered(t, st, didAlice, "#p") },
		},
	})
}

// TestUnfollowedStateUnchanged: without a Claim the section never appears, so a snapshot of a
// state that never used the module encodes as before.
func TestUnfollowedStateUnchanged(t *testing.T) {
	h := fsmtest.NewHarness(t)
	h.OK(fsmtest.World(didAlice, didBob)...)
	h.OK(fsm.Join{Session: "s-alice", Channel: "#a"}, fsm.Part{Session: "s-alice", Channel: "#a"},
		fsm.Join{Session: "s-alice", Channel: "#b"}, fsm.EndSession{Session: "s-alice"})
	h.Read(func(st *fsm.State) {
		if section.Of(st) != nil {
			t.Error("the section appeared without a Claim")
		}
	})
}

// TestBounds: an account keeps at most MaxChannels, and a new account beyond MaxAccounts evicts
// the one changed longest ago.
func TestBounds(t *testing.T) {
	var many []string
	for i := range MaxChannels + 5 {
		many = append(many, fmt.Sprintf("#c%03d", i))
	}
	if got := merge(nil, many); len(got) != MaxChannels || got[0] != "#c000" {
		t.Errorf("merge kept %d channels from %s", len(got), got[0])
	}
	if got := merge([]string{"#a", "#c"}, []string{"#b", "#a"}); !slices.Equal(got, []string{"#a", "#b", "#c"}) {
		t.Errorf("merge = %q", got)
	}

	f := fsm.NewFixture()
	f.AddSession(fsm.Session{ID: "s-new", Nick: "new", DID: "did:plc:new"})
	a := fsm.NewApplier(f.State(), fsm.Envelope{Time: 10 * hour})
	s := section.Make(a)
	s.Accounts = map[string]*Entry{}
	for i := range MaxAccounts {
		s.Accounts[fmt.Sprintf("did:plc:%05d", i)] = &Entry{At: 9*hour + int64(i%7)}
	}
	if res := claim(a, Claim{Session: "s-new", MaxAge: 24 * hour}); res.Code != fsm.OK {
		t.Fatalf("claim: %v", res.Code)
	}
	if len(s.Accounts) != MaxAccounts || s.Accounts["did:plc:new"] == nil || s.Accounts["did:plc:00000"] != nil || s.Accounts["did:plc:00007"] == nil {
		t.Errorf("%d accounts; new %v, 00000 %v, 00007 %v", len(s.Accounts), s.Accounts["did:plc:new"], s.Accounts["did:plc:00000"], s.Accounts["did:plc:00007"])
	}
}

// TestEncodingGolden pins the log encoding of Claim.
func TestEncodingGolden(t *testing.T) {
	samples := []fsm.Command{Claim{Session: "s1", MaxAge: 604800000}}
	fsmtest.CheckGolden(t, samples, []string{"\x5b\x00" + fsmtest.GoldenEnv + `{"session":"s1","max_age":604800000}}`})
	fsmtest.CheckSampled(t, samples, module())
}

// TestLevel: Claim is of feature level 2; a cluster at level 1 refuses it.
func TestLevel(t *testing.T) {
	cmd := Claim{Session: "s1", MaxAge: 1}
	entry, err := fsm.Encode(cmd, "r", "n", 1)
	if err != nil {
		t.Fatal(err)
	}
	if l, e := fsm.CommandLevel(cmd), fsm.EntryLevel(entry); l != 2 || e != 2 {
		t.Errorf("CommandLevel %d, EntryLevel %d, want 2", l, e)
	}
}

func randomCommand(c *fsmtest.Chooser) fsm.Command {
	s := fsmtest.Pick(c, fsmtest.GenSessions)
	switch c.Intn(6) {
	case 0:
		return fsm.RenameChannel{Session: s, Channel: fsmtest.Pick(c, fsmtest.GenChannels), NewName: fsmtest.Pick(c, []string{"#z", "#y", "#a"})}
	case 1:
		return fsm.Kick{Session: s, Channel: fsmtest.Pick(c, fsmtest.GenChannels), Target: fsmtest.Pick(c, fsmtest.GenSessions)}
	case 2, 3:
		return fsm.EndSession{Session: s}
	}
	return Claim{Session: s, MaxAge: int64(fsmtest.Pick(c, []int{0, 1000, 60_000, 3_600_000}))}
}

// TestDeterminism applies seeded random logs of claims and core commands to machines that must
// agree, one restored from a snapshot halfway; every remembered list stays sorted and bounded.
func TestDeterminism(t *testing.T) {
	codes := map[fsm.Code]bool{}
	for _, seed := range []uint64{1, 2, 3} {
		log := fsmtest.RandomLog(seed, 3000, randomCommand)
		for c := range fsmtest.CheckDeterminism(t, log, func(st *fsm.State) error {
			if s := section.Of(st); s != nil {
				for did, e := range s.Accounts {
					if !slices.IsSorted(e.Channels) || len(e.Channels) > MaxChannels || did == "" {
						return fmt.Errorf("entry of %q: %q", did, e.Channels)
					}
				}
			}
			return nil
		}) {
			codes[c] = true
		}
	}
	for _, c := range []fsm.Code{fsm.OK, fsm.ErrInvalid, fsm.ErrNoSuchSession} {
		if !codes[c] {
			t.Errorf("no log answered %s", c)
		}
	}
}
