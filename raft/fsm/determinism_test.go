package fsm

import (
	"bytes"
	"encoding/json"
	"testing"
)

// recorder applies entries to a machine and keeps every result and event, encoded, for comparison.
type recorder struct {
	m       *Machine
	results []string
	events  bytes.Buffer
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{m: New(quietLogger())}
	enc := json.NewEncoder(&r.events)
	r.m.SetObserver(func(_ uint64, evs []Event) {
		if err := enc.Encode(evs); err != nil {
			t.Errorf("encode events: %v", err)
		}
	})
	return r
}

func (r *recorder) apply(t *testing.T, index uint64, data []byte) Result {
	res := r.m.Apply(index, data).(Result)
	r.results = append(r.results, jsonString(t, res))
	return res
}

func TestDeterminism(t *testing.T) {
	const n = 3000
	okTypes := map[CommandType]bool{} // over all seeds: together the logs apply every type
	for _, seed := range []uint64{1, 2, 0xdecaf, 7, 19} {
		log := randomLog(seed, n)
		a, b, c := newRecorder(t), newRecorder(t), newRecorder(t)
		codes := map[Code]int{}
		for i, entry := range log {
			idx := uint64(i + 1)
			res := a.apply(t, idx, entry)
			codes[res.Code]++
			if res.Code == OK {
				okTypes[CommandType(entry[0])] = true
			}
			b.apply(t, idx, entry)
			c.apply(t, idx, entry)
			if i == n/2 {
				// c continues from a snapshot restored over its own state; d from one restored
				// into a fresh machine.
				snap := snapshotBytes(t, c.m)
				if err := c.m.Restore(bytes.NewReader(snap)); err != nil {
					t.Fatalf("restore: %v", err)
				}
			}
			if i%500 == 0 {
				a.m.Read(func(st *State) {
					if err := checkInvariants(st); err != nil {
						t.Fatalf("seed %d entry %d: %v", seed, i, err)
					}
				})
			}
		}
		if a.m.Hash() != b.m.Hash() {
			t.Errorf("seed %d: two machines disagree after the same log", seed)
		}
		if a.m.Hash() != c.m.Hash() {
			t.Errorf("seed %d: snapshot and restore in the middle changed the outcome", seed)
		}
		if !bytes.Equal(snapshotBytes(t, a.m), snapshotBytes(t, b.m)) {
			t.Errorf("seed %d: snapshots differ", seed)
		}
		for i := range a.results {
			if a.results[i] != b.results[i] || a.results[i] != c.results[i] {
				t.Fatalf("seed %d entry %d: results %s / %s / %s", seed, i, a.results[i], b.results[i], c.results[i])
			}
		}
		if !bytes.Equal(a.events.Bytes(), b.events.Bytes()) || !bytes.Equal(a.events.Bytes(), c.events.Bytes()) {
			t.Errorf("seed %d: event streams differ", seed)
		}
		a.m.Read(func(st *State) {
			if err := checkInvariants(st); err != nil {
				t.Errorf("seed %d final: %v", seed, err)
			}
		})
		// The log must exercise the machine, not bounce off it.
		if len(codes) < 12 {
			t.Errorf("seed %d: weak log: codes %v", seed, codes)
		}
	}
	for _, typ := range knownTypes() {
		if !okTypes[typ] {
			t.Errorf("no seed's log applied command type %d successfully", typ)
		}
	}
}

// TestDeterminismFreshRestore replays the second half of a log on a machine that starts from a
// snapshot of the first half, as a node catching up from a leader's snapshot does.
func TestDeterminismFreshRestore(t *testing.T) {
	log := randomLog(7, 2000)
	full := newRecorder(t)
	for i, e := range log {
		full.apply(t, uint64(i+1), e)
	}
	half := newRecorder(t)
	for i, e := range log[:1000] {
		half.apply(t, uint64(i+1), e)
	}
	fresh := newRecorder(t)
	// A machine with unrelated state of its own: Restore must replace it.
	for i, e := range randomLog(8, 300) {
		fresh.apply(t, uint64(i+1), e)
	}
	if err := fresh.m.Restore(bytes.NewReader(snapshotBytes(t, half.m))); err != nil {
		t.Fatal(err)
	}
	for i, e := range log[1000:] {
		fresh.apply(t, uint64(1000+i+1), e)
	}
	if fresh.m.Hash() != full.m.Hash() {
		t.Errorf("catch-up from a snapshot diverged")
	}
	for i, r := range fresh.results[300:] {
		if r != full.results[1000+i] {
			t.Fatalf("entry %d: %s vs %s", 1000+i, r, full.results[1000+i])
		}
	}
}
