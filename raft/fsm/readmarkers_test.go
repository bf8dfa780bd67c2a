package fsm

import (
	"strconv"
	"strings"
	"testing"
)

func TestSetReadMarker(t *testing.T) {
	h := newHarness(t)
	steps := []struct {
		name  string
		cmd   SetReadMarker
		code  Code
		want  int64 // the marker after the step
		event bool
	}{
		{"first marker", SetReadMarker{DID: didAlice, Target: "#c", At: 1000}, OK, 1000, true},
		{"forward", SetReadMarker{DID: didAlice, Target: "#c", At: 2000}, OK, 2000, true},
		{"never back", SetReadMarker{DID: didAlice, Target: "#c", At: 1500}, NoChange, 2000, false},
		{"same time", SetReadMarker{DID: didAlice, Target: "#c", At: 2000}, NoChange, 2000, false},
		{"no DID", SetReadMarker{Target: "#c", At: 3000}, ErrInvalid, 2000, false},
		{"no target", SetReadMarker{DID: didAlice, At: 3000}, ErrInvalid, 2000, false},
		{"no time", SetReadMarker{DID: didAlice, Target: "#c"}, ErrInvalid, 2000, false},
		{"target too long", SetReadMarker{DID: didAlice, Target: strings.Repeat("x", MaxReadMarkerTarget+1), At: 3000}, ErrInvalid, 2000, false},
	}
	for _, st := range steps {
		h.events = nil
		res := h.apply(st.cmd)
		var got int64
		h.m.Read(func(s *State) { got = s.ReadMarker(didAlice, "#c") })
		if res.Code != st.code || got != st.want {
			t.Fatalf("%s: code %s, marker %d; want %s, %d", st.name, res.Code, got, st.code, st.want)
		}
		if st.event != (len(h.events) == 1 && h.events[0].Kind == EvReadMarker && h.events[0].Actor.DID == didAlice &&
			h.events[0].Channel == "#c" && h.events[0].MarkerAt == st.want) {
			t.Fatalf("%s: events %+v", st.name, h.events)
		}
	}
	// Another DID's markers are its own.
	h.apply(SetReadMarker{DID: didBob, Target: "#c", At: 500})
	h.m.Read(func(s *State) {
		if s.ReadMarker(didBob, "#c") != 500 || s.ReadMarker(didAlice, "#c") != 2000 || s.ReadMarker(didCarol, "#c") != 0 {
			t.Fatalf("markers %v", s.readMarkers)
		}
	})
}

func TestReadMarkersAreBounded(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < MaxReadMarkers; i++ {
		if res := h.apply(SetReadMarker{DID: didAlice, Target: "#c" + strconv.Itoa(i), At: 1}); res.Code != OK {
			t.Fatalf("marker %d: %s", i, res.Code)
		}
	}
	if res := h.apply(SetReadMarker{DID: didAlice, Target: "#one-too-many", At: 1}); res.Code != ErrListFull {
		t.Fatalf("marker beyond the bound: %s", res.Code)
	}
	if res := h.apply(SetReadMarker{DID: didAlice, Target: "#c0", At: 2}); res.Code != OK {
		t.Fatalf("moving a kept marker: %s", res.Code)
	}
}
