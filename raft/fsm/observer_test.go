package fsm

import (
	"bytes"
	"fmt"
	"testing"
)

// The observer gets each applied entry's index with its events (entries without events are not
// observed), and a restore from a snapshot is reported with the snapshot's index.
func TestObserverGetsIndexesAndRestores(t *testing.T) {
	m := New(quietLogger())
	var observed []uint64
	m.SetObserver(func(index uint64, evs []Event) {
		for _, e := range evs {
			if e.Index != index {
				t.Errorf("event index %d in entry %d", e.Index, index)
			}
		}
		observed = append(observed, index)
	})
	var restored []uint64
	m.SetRestoreObserver(func(index uint64) { restored = append(restored, index) })
	for i, c := range []Command{reg("s1", "one", ""), Join{Session: "s1", Channel: "#c"}, SetFavorites{DID: "did:plc:x"}, Join{Session: "s1", Channel: "#d"}} {
		m.Apply(uint64(i+1), mustEncode(t, c, fmt.Sprint(i), "n", 1))
	}
	if fmt.Sprint(observed) != "[1 2 4]" {
		t.Errorf("observed entries %v, want [1 2 4] (the registration and the JOINs)", observed)
	}
	snap, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := snap.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	other := New(quietLogger())
	other.SetRestoreObserver(func(index uint64) { restored = append(restored, index) })
	if err := other.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(restored) != "[4]" {
		t.Errorf("restores %v, want [4]", restored)
	}
}
