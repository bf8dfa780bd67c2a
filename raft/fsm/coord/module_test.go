package coord

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/coord/act"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

// TestEncodingGolden pins the log encoding of every command type of the module: entries already
// in logs keep decoding to the same commands, and each type keeps its number and level.
func TestEncodingGolden(t *testing.T) {
	if len(samples) != len(golden) {
		t.Fatalf("%d samples, %d golden entries", len(samples), len(golden))
	}
	seen := map[fsm.CommandType]bool{}
	for i, cmd := range samples {
		got, err := fsm.Encode(cmd, "r1", "n1", 1_700_000_000_000)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != golden[i] {
			t.Errorf("%T encoding drifted:\n got %q\nwant %q", cmd, got, golden[i])
		}
		dec, _, _, err := fsm.Decode([]byte(golden[i]))
		if err != nil || !reflect.DeepEqual(dec, cmd) {
			t.Errorf("%T: golden entry decodes to %+v, %v", cmd, dec, err)
		}
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

// TestDeterminism applies seeded random logs of coordination and core commands to three
// machines, one of them restored from a snapshot halfway: they must end in the same state and
// answer every entry alike, and the budget accounting must match the state.
func TestDeterminism(t *testing.T) {
	codes := map[fsm.Code]bool{}
	for _, seed := range []uint64{1, 2, 3} {
		log := randomLog(seed, 3000)
		a, b, c := fsm.New(quietLogger()), fsm.New(quietLogger()), fsm.New(quietLogger())
		for i, e := range log {
			idx := uint64(i + 1)
			ra, rb, rc := a.Apply(idx, e), b.Apply(idx, e), c.Apply(idx, e)
			if !reflect.DeepEqual(ra, rb) || !reflect.DeepEqual(ra, rc) {
				t.Fatalf("seed %d entry %d: results %+v / %+v / %+v", seed, i, ra, rb, rc)
			}
			codes[ra.(fsm.Result).Code] = true
			if i == len(log)/2 {
				c = fsmtest.Restored(t, c)
			}
		}
		if a.Hash() != b.Hash() || a.Hash() != c.Hash() {
			t.Errorf("seed %d: machines disagree after the same log", seed)
		}
		if !bytes.Equal(fsmtest.Snapshot(t, a), fsmtest.Snapshot(t, c)) {
			t.Errorf("seed %d: snapshots differ", seed)
		}
		a.Read(func(st *fsm.State) {
			if err := checkBudget(st); err != nil {
				t.Errorf("seed %d: %v", seed, err)
			}
		})
	}
	if len(codes) < 8 {
		t.Errorf("weak logs: codes %v", codes)
	}
}
