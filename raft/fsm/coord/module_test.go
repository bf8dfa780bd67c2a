package coord

import (
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/coord/act"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

// TestEncodingGolden pins the log encoding of every command type of the module: entries already
// in logs keep decoding to the same commands, and each type keeps its number and level.
func TestEncodingGolden(t *testing.T) {
	fsmtest.CheckGolden(t, samples, golden)
	seen := map[fsm.CommandType]bool{}
	for _, cmd := range samples {
		want := 0
		if cmd.CommandType() == TypeDespawn {
			want = 1
		}
		if l := fsm.CommandLevel(cmd); l != want {
			t.Errorf("%T: level %d, want %d", cmd, l, want)
		}
		seen[cmd.CommandType()] = true
	}
	for typ := range module().Commands {
		if !seen[typ] {
			t.Errorf("command type %d has no sample", typ)
		}
	}
}

// TestRefusalCodes: every refusal of the act rules has its own persisted result code, named.
func TestRefusalCodes(t *testing.T) {
	codes := map[fsm.Code]bool{}
	for _, r := range act.Refusals {
		c := RefusalCode(r)
		if c < ErrActUnknownKind || c > ErrActAcceptsNotABid || codes[c] {
			t.Errorf("refusal %s has code %d", r, c)
		}
		codes[c] = true
		if c.String() != "act-"+string(r) {
			t.Errorf("code %d is named %s", c, c)
		}
	}
	if RefusalCode(act.UnknownKind) != 50 || RefusalCode(act.AcceptsNotABid) != 61 {
		t.Error("act refusal codes renumbered")
	}
}

// TestDeterminism applies seeded random logs of coordination and core commands to machines
// that must agree, one restored from a snapshot halfway; the budget accounting must match the
// state.
func TestDeterminism(t *testing.T) {
	codes := map[fsm.Code]bool{}
	for _, seed := range []uint64{1, 2, 3} {
		for c := range fsmtest.CheckDeterminism(t, fsmtest.RandomLog(seed, 3000, randomCommand), checkBudget) {
			codes[c] = true
		}
	}
	if len(codes) < 8 {
		t.Errorf("weak logs: codes %v", codes)
	}
}
