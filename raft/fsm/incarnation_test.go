package fsm

import (
	"bytes"
	"testing"
)

// TestChannelIncarnations: a channel created again under a deleted one's name is a new incarnation,
// a channel that merely changes modes keeps its own, and old snapshots restore with the legacy "".
func TestChannelIncarnations(t *testing.T) {
	h := newHarness(t)
	h.mustOK(world()...)
	incOf := func(name string) (inc string, ok bool) {
		h.read(func(st *State) {
			if c := st.channels[name]; c != nil {
				inc, ok = c.Incarnation, true
			}
		})
		return inc, ok
	}
	h.mustOK(Join{Session: "s-guest", Channel: "#x"})
	first, ok := incOf("#x")
	if !ok || first == "" {
		t.Fatalf("a new channel has incarnation %q", first)
	}
	h.mustOK(modes("s-guest", "#x", add("i", "")), Join{Session: "s-oper", Channel: "#x"}, Part{Session: "s-oper", Channel: "#x"})
	if inc, _ := incOf("#x"); inc != first {
		t.Fatalf("incarnation changed from %q to %q without the channel being deleted", first, inc)
	}
	h.mustOK(Part{Session: "s-guest", Channel: "#x"})
	if _, ok := incOf("#x"); ok {
		t.Fatalf("the empty unowned channel was kept")
	}
	h.mustOK(Join{Session: "s-bob", Channel: "#x"})
	second, _ := incOf("#x")
	if second == "" || second == first {
		t.Fatalf("the re-created channel has incarnation %q (the first had %q)", second, first)
	}

	var c *Channel
	h.read(func(st *State) { c = st.channels["#x"] })
	cases := []struct {
		inc    string
		public bool
		want   bool
	}{
		{second, false, true},
		{second, true, true},
		{first, true, true},
		{first, false, false},
		{"", false, false},
	}
	for _, tc := range cases {
		if got := c.MessageVisible(tc.inc, tc.public); got != tc.want {
			t.Errorf("MessageVisible(%q, %v) = %v, want %v", tc.inc, tc.public, got, tc.want)
		}
	}
	if (*Channel)(nil).MessageVisible("", true) {
		t.Errorf("a message of a channel that does not exist is visible")
	}

	// A snapshot written before incarnations existed restores with "" (the legacy incarnation).
	old := []byte(`{"channels":{"#old":{"name":"#old","created_at":1,"members":{}}},"index":7}`)
	m := New(quietLogger())
	if err := m.Restore(bytes.NewReader(old)); err != nil {
		t.Fatal(err)
	}
	m.Read(func(st *State) {
		inc, public, ok := st.ChannelScope("#old")
		if !ok || inc != "" || !public {
			t.Fatalf("legacy channel scope = %q %v %v", inc, public, ok)
		}
	})
}
