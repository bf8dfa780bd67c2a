package media

import (
	"bytes"
	"slices"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

func holdersOf(h *fsmtest.Harness, id string) []string {
	var set []string
	h.Read(func(st *fsm.State) {
		if o, ok := Of(st).Object(id); ok {
			set = o.HolderSet()
		}
	})
	return set
}

// TestMediaHolders: an upload recorded with the nodes it was copied to, a node adding itself,
// a removed node dropped everywhere except where it is the last holder, and the bounds.
func TestMediaHolders(t *testing.T) {
	h := fsmtest.NewHarness(t)
	rec := func(id string, holders ...string) RecordMedia {
		return RecordMedia{Object: MediaObject{ID: id, Holder: "node-a", Holders: holders, Size: 10, MIME: "image/png", Uploader: didAlice}}
	}
	h.OK(rec("m1", "node-b", "node-a"), rec("m2"), rec("m3", "node-a"))
	many := make([]string, MaxMediaHolders+1)
	for i := range many {
		many[i] = "node-" + string(rune('a'+i))
	}
	for _, c := range []struct {
		name string
		cmd  fsm.Command
		want fsm.Code
	}{
		{"duplicate holders", rec("m4", "node-a", "node-a"), fsm.ErrInvalid},
		{"empty holder name", rec("m4", "node-a", ""), fsm.ErrInvalid},
		{"too many holders", rec("m4", many...), fsm.ErrInvalid},
		{"add to an unknown upload", AddMediaHolder{ID: "nope", Node: "node-c"}, ErrMediaNotFound},
		{"add without a node", AddMediaHolder{ID: "m1"}, fsm.ErrInvalid},
		{"add a holder already named", AddMediaHolder{ID: "m1", Node: "node-b"}, fsm.NoChange},
		{"add a third holder", AddMediaHolder{ID: "m1", Node: "node-c"}, fsm.OK},
		{"add a second holder to a record without a set", AddMediaHolder{ID: "m2", Node: "node-c"}, fsm.OK},
		{"drop without a node", DropMediaHolder{}, fsm.ErrInvalid},
		{"drop a node that holds nothing", DropMediaHolder{Node: "node-z"}, fsm.NoChange},
		{"drop the node that took the uploads", DropMediaHolder{Node: "node-a"}, fsm.OK},
		{"expire by a node that holds no copy", DeleteMedia{ID: "m1", Expired: true, Holder: "node-a"}, ErrMediaNotYours},
	} {
		if got := h.Do(c.cmd).Code; got != c.want {
			t.Fatalf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	for id, want := range map[string][]string{
		"m1": {"node-b", "node-c"}, // node-a dropped
		"m2": {"node-c"},           // node-a dropped
		"m3": {"node-a"},           // the last holder stays named
	} {
		if got := holdersOf(h, id); !slices.Equal(got, want) {
			t.Fatalf("holders of %s: %v, want %v", id, got, want)
		}
	}
	if r := h.Do(DropMediaHolder{Node: "node-c"}); r.Code != fsm.OK || r.Count != 1 {
		t.Fatalf("drop node-c: %+v", r)
	}
	if got := holdersOf(h, "m2"); !slices.Equal(got, []string{"node-c"}) {
		t.Fatalf("the last holder of m2 was dropped: %v", got)
	}
	h.Read(func(st *fsm.State) {
		if got := len(Of(st).ObjectsHeldBy("node-b")); got != 1 {
			t.Fatalf("node-b holds %d uploads, want 1", got)
		}
	})
	if got := h.Do(DeleteMedia{ID: "m1", Expired: true, Holder: "node-b"}).Code; got != fsm.OK {
		t.Fatalf("expired by a holder that did not take the upload: %v", got)
	}
}

// TestMediaHoldersSnapshot: a state whose uploads have no holder besides the node that took them
// encodes exactly as before holder sets existed; one with holders survives a snapshot.
func TestMediaHoldersSnapshot(t *testing.T) {
	h := fsmtest.NewHarness(t)
	h.OK(RecordMedia{Object: MediaObject{ID: "m1", Holder: "node-a", Holders: []string{"node-a"}, Size: 3, MIME: "image/png", Uploader: didAlice}})
	if snap := fsmtest.Snapshot(t, h.Machine.Machine); bytes.Contains(snap, []byte(`"holders"`)) {
		t.Fatalf("a lone holder encodes a holder set: %s", snap)
	}
	if got := h.Do(DropMediaHolder{Node: "node-a"}).Code; got != fsm.NoChange {
		t.Fatalf("dropping the only holder: %v", got)
	}
	empty := fsmtest.NewHarness(t)
	if got := empty.Do(DropMediaHolder{Node: "node-a"}).Code; got != fsm.NoChange {
		t.Fatalf("drop on an empty state: %v", got)
	}
	if snap := fsmtest.Snapshot(t, empty.Machine.Machine); bytes.Contains(snap, []byte(`"media"`)) {
		t.Fatalf("a drop on an empty state created a media section: %s", snap)
	}
	h.OK(AddMediaHolder{ID: "m1", Node: "node-b"})
	fresh := fsmtest.Restored(t, h.Machine.Machine)
	fresh.Read(func(st *fsm.State) {
		if o, _ := Of(st).Object("m1"); !slices.Equal(o.HolderSet(), []string{"node-a", "node-b"}) {
			t.Fatalf("holders after restore: %v", o.HolderSet())
		}
	})
}
