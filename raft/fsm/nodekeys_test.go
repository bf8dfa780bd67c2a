package fsm

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

func init() {
	extraSamples = append(extraSamples, SetNodeKey{Node: "node-a", Key: testKey(1)})
	extraGolden = append(extraGolden,
		"\x5a\x00"+`{"rid":"r1","node":"n1","ts":1700000000000,"body":{"node":"node-a","key":"AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="}}`)
	extraGenerators = append(extraGenerators, func(c chooser) Command {
		if c.intn(4) == 0 {
			return SetNodeKey{Node: pick(c, genNodes)}
		}
		return SetNodeKey{Node: pick(c, genNodes), Key: testKey(byte(c.intn(2)))}
	})
}

// TestSetNodeKey: a node is pinned once; a second key for it is refused until it is unpinned;
// malformed pins change nothing; pins survive a snapshot.
func TestSetNodeKey(t *testing.T) {
	pinned := with(nil, SetNodeKey{Node: "node-b", Key: testKey(1)})
	keyIs := func(node string, want []byte) func(*testing.T, *State, int64) {
		return func(t *testing.T, st *State, _ int64) {
			got, ok := st.NodeKey(node)
			if ok != (want != nil) || !bytes.Equal(got, want) {
				t.Fatalf("%s pinned to %x (%v), want %x", node, got, ok, want)
			}
		}
	}
	cases := []applyCase{
		{name: "pin", cmd: SetNodeKey{Node: "node-b", Key: testKey(1)}, want: Result{Code: OK}, check: keyIs("node-b", testKey(1))},
		{name: "same key again", setup: pinned, cmd: SetNodeKey{Node: "node-b", Key: testKey(1)}, want: Result{Code: NoChange}},
		{name: "another key", setup: pinned, cmd: SetNodeKey{Node: "node-b", Key: testKey(2)}, want: Result{Code: ErrNodeKeyPinned}, check: keyIs("node-b", testKey(1))},
		{name: "another node", setup: pinned, cmd: SetNodeKey{Node: "node-c", Key: testKey(2)}, want: Result{Code: OK}, check: keyIs("node-c", testKey(2))},
		{name: "unpin", setup: pinned, cmd: SetNodeKey{Node: "node-b"}, want: Result{Code: OK}, check: keyIs("node-b", nil)},
		{name: "unpin a node not pinned", cmd: SetNodeKey{Node: "node-b"}, want: Result{Code: NoChange}},
		{name: "short key", cmd: SetNodeKey{Node: "node-b", Key: []byte{1, 2}}, want: Result{Code: ErrInvalid}, check: keyIs("node-b", nil)},
		{name: "no node", cmd: SetNodeKey{Key: testKey(1)}, want: Result{Code: ErrInvalid}},
		{name: "long node id", cmd: SetNodeKey{Node: string(make([]byte, MaxNodeIDLen+1)), Key: testKey(1)}, want: Result{Code: ErrInvalid}},
	}
	runApplyCases(t, cases)

	h := newHarness(t)
	data, err := json.Marshal(h.m.state)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte(`"node_keys"`)) {
		t.Fatalf("a state without pins encodes a node_keys section: %s", data)
	}
	h.mustOK(SetNodeKey{Node: "node-b", Key: testKey(1)}, SetNodeKey{Node: "node-a", Key: testKey(3)})
	fresh := restoredCopy(t, h.m, snapshotBytes(t, h.m))
	fresh.Read(func(st *State) {
		if got := st.PinnedNodes(); !slices.Equal(got, []string{"node-a", "node-b"}) {
			t.Fatalf("restored pins %v", got)
		}
		keyIs("node-a", testKey(3))(t, st, 0)
	})
}
