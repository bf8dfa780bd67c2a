package fsm

import (
	"bytes"
	"slices"
	"testing"
)

func init() {
	extraSamples = append(extraSamples, AddMediaHolder{ID: "m1", Node: "n2"}, DropMediaHolder{Node: "n1"})
	extraGolden = append(extraGolden,
		"\x2e\x00"+`{"rid":"r1","node":"n1","ts":1700000000000,"body":{"id":"m1","node":"n2"}}`,
		"\x2f\x00"+`{"rid":"r1","node":"n1","ts":1700000000000,"body":{"node":"n1"}}`)
	extraGenerators = append(extraGenerators, func(c chooser) Command {
		switch c.intn(3) {
		case 0:
			return RecordMedia{Object: MediaObject{ID: pick(c, []string{"m1", "m2", "m3"}), Holder: pick(c, genNodes),
				Holders: pick(c, [][]string{nil, genNodes[:2], genNodes[1:], {"", "x"}}), Size: int64(c.intn(100)),
				MIME: "image/png", Uploader: pick(c, genDIDs[2:])}}
		case 1:
			return AddMediaHolder{ID: pick(c, []string{"m1", "m2", "m3", "m9"}), Node: pick(c, genNodes)}
		}
		return DropMediaHolder{Node: pick(c, genNodes)}
	})
}

func holdersOf(h *harness, id string) []string {
	var set []string
	h.read(func(st *State) {
		if o, ok := st.MediaObject(id); ok {
			set = o.HolderSet()
		}
	})
	return set
}

// TestMediaHolders: an upload recorded with the nodes it was copied to, a node adding itself,
// a removed node dropped everywhere except where it is the last holder, and the bounds.
func TestMediaHolders(t *testing.T) {
	h := newHarness(t)
	rec := func(id string, holders ...string) RecordMedia {
		return RecordMedia{Object: MediaObject{ID: id, Holder: "node-a", Holders: holders, Size: 10, MIME: "image/png", Uploader: didAlice}}
	}
	h.mustOK(rec("m1", "node-b", "node-a"), rec("m2"), rec("m3", "node-a"))
	many := make([]string, MaxMediaHolders+1)
	for i := range many {
		many[i] = "node-" + string(rune('a'+i))
	}
	for _, c := range []struct {
		name string
		cmd  Command
		want Code
	}{
		{"duplicate holders", rec("m4", "node-a", "node-a"), ErrInvalid},
		{"empty holder name", rec("m4", "node-a", ""), ErrInvalid},
		{"too many holders", rec("m4", many...), ErrInvalid},
		{"add to an unknown upload", AddMediaHolder{ID: "nope", Node: "node-c"}, ErrMediaNotFound},
		{"add without a node", AddMediaHolder{ID: "m1"}, ErrInvalid},
		{"add a holder already named", AddMediaHolder{ID: "m1", Node: "node-b"}, NoChange},
		{"add a third holder", AddMediaHolder{ID: "m1", Node: "node-c"}, OK},
		{"add a second holder to a record without a set", AddMediaHolder{ID: "m2", Node: "node-c"}, OK},
		{"drop without a node", DropMediaHolder{}, ErrInvalid},
		{"drop a node that holds nothing", DropMediaHolder{Node: "node-z"}, NoChange},
		{"drop the node that took the uploads", DropMediaHolder{Node: "node-a"}, OK},
		{"expire by a node that holds no copy", DeleteMedia{ID: "m1", Expired: true, Holder: "node-a"}, ErrMediaNotYours},
	} {
		if got := h.apply(c.cmd).Code; got != c.want {
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
	if r := h.apply(DropMediaHolder{Node: "node-c"}); r.Code != OK || r.Count != 1 {
		t.Fatalf("drop node-c: %+v", r)
	}
	if got := holdersOf(h, "m2"); !slices.Equal(got, []string{"node-c"}) {
		t.Fatalf("the last holder of m2 was dropped: %v", got)
	}
	h.read(func(st *State) {
		if got := len(st.MediaObjectsHeldBy("node-b")); got != 1 {
			t.Fatalf("node-b holds %d uploads, want 1", got)
		}
	})
	if got := h.apply(DeleteMedia{ID: "m1", Expired: true, Holder: "node-b"}).Code; got != OK {
		t.Fatalf("expired by a holder that did not take the upload: %v", got)
	}
}

// TestMediaHoldersSnapshot: a state whose uploads have no holder besides the node that took them
// encodes exactly as before holder sets existed; one with holders survives a snapshot.
func TestMediaHoldersSnapshot(t *testing.T) {
	h := newHarness(t)
	h.mustOK(RecordMedia{Object: MediaObject{ID: "m1", Holder: "node-a", Holders: []string{"node-a"}, Size: 3, MIME: "image/png", Uploader: didAlice}})
	if snap := snapshotBytes(t, h.m); bytes.Contains(snap, []byte(`"holders"`)) {
		t.Fatalf("a lone holder encodes a holder set: %s", snap)
	}
	if got := h.apply(DropMediaHolder{Node: "node-a"}).Code; got != NoChange {
		t.Fatalf("dropping the only holder: %v", got)
	}
	empty := newHarness(t)
	if got := empty.apply(DropMediaHolder{Node: "node-a"}).Code; got != NoChange {
		t.Fatalf("drop on an empty state: %v", got)
	}
	if snap := snapshotBytes(t, empty.m); bytes.Contains(snap, []byte(`"media"`)) {
		t.Fatalf("a drop on an empty state created a media section: %s", snap)
	}
	h.mustOK(AddMediaHolder{ID: "m1", Node: "node-b"})
	fresh := restoredCopy(t, h.m, snapshotBytes(t, h.m))
	fresh.Read(func(st *State) {
		if o, _ := st.MediaObject("m1"); !slices.Equal(o.HolderSet(), []string{"node-a", "node-b"}) {
			t.Fatalf("holders after restore: %v", o.HolderSet())
		}
	})
}
