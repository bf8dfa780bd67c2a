package fsm

import (
	"fmt"
	"strings"
	"testing"
)

func pinned(want ...string) func(*testing.T, *State, int64) {
	return chanCheck(func(t *testing.T, c *Channel) {
		var got []string
		for _, p := range c.Pins {
			got = append(got, p.MsgID)
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("pins %v, want %v", got, want)
		}
	})
}

func TestApplyPin(t *testing.T) {
	pin := func(session, msgid string) Pin { return Pin{Session: session, Channel: "#c", MsgID: msgid} }
	full := channelWorld()
	var fullWant []string
	for i := range MaxPins {
		full = append(full, pin("s-alice", fmt.Sprintf("m%02d", i)))
		fullWant = append([]string{fmt.Sprintf("m%02d", i)}, fullWant...)
	}
	runApplyCases(t, []applyCase{
		{
			name: "op pins", setup: channelWorld(), cmd: pin("s-alice", "m1"), want: Result{Code: OK}, events: []EventKind{EvPin},
			check: func(t *testing.T, st *State, at int64) {
				p := st.channels["#c"].Pins
				if len(p) != 1 || p[0] != (PinEntry{MsgID: "m1", PinnedBy: "alice", PinnedByDID: didAlice, PinnedAt: at}) {
					t.Errorf("pins %+v", p)
				}
			},
		},
		{name: "newest first", setup: with(channelWorld(), pin("s-alice", "m1")), cmd: pin("s-alice", "m2"), want: Result{Code: OK}, events: []EventKind{EvPin}, check: pinned("m2", "m1")},
		{name: "already pinned", setup: with(channelWorld(), pin("s-alice", "m1")), cmd: pin("s-alice", "m1"), want: Result{Code: ErrAlreadyPinned}, check: pinned("m1")},
		{name: "member", setup: channelWorld(), cmd: pin("s-bob", "m1"), want: Result{Code: ErrChanOpNeeded}, check: pinned()},
		{name: "halfop", setup: with(channelWorld(), modes("s-alice", "#c", addTo("h", "s-bob"))), cmd: pin("s-bob", "m1"), want: Result{Code: ErrChanOpNeeded}},
		{
			name: "server operator from outside", setup: aliceOnly(), cmd: pin("s-oper", "m1"), want: Result{Code: OK}, events: []EventKind{EvPin},
			check: func(t *testing.T, st *State, _ int64) {
				if p := st.channels["#c"].Pins; len(p) != 1 || p[0].PinnedBy != "oper" || p[0].PinnedByDID != "" {
					t.Errorf("pins %+v", p)
				}
			},
		},
		{name: "empty msgid", setup: channelWorld(), cmd: pin("s-alice", ""), want: Result{Code: ErrInvalid}},
		{name: "msgid too long", setup: channelWorld(), cmd: pin("s-alice", strings.Repeat("m", 65)), want: Result{Code: ErrInvalid}},
		{name: "msgid at the limit", setup: channelWorld(), cmd: pin("s-alice", strings.Repeat("m", 64)), want: Result{Code: OK}, events: []EventKind{EvPin}},
		{name: "no channel", setup: world(), cmd: Pin{Session: "s-alice", Channel: "#none", MsgID: "m"}, want: Result{Code: ErrNoSuchChannel}},
		{name: "no session", setup: channelWorld(), cmd: pin("s-x", "m"), want: Result{Code: ErrNoSuchSession}},
		{
			name: "full list drops the oldest", setup: full, cmd: pin("s-alice", "new"), want: Result{Code: OK}, events: []EventKind{EvPin},
			check: pinned(append([]string{"new"}, fullWant[:MaxPins-1]...)...),
		},
	})
}

func TestApplyUnpin(t *testing.T) {
	unpin := func(session, msgid string) Unpin { return Unpin{Session: session, Channel: "#c", MsgID: msgid} }
	three := with(channelWorld(), Pin{Session: "s-alice", Channel: "#c", MsgID: "m1"},
		Pin{Session: "s-alice", Channel: "#c", MsgID: "m2"}, Pin{Session: "s-alice", Channel: "#c", MsgID: "m3"})
	runApplyCases(t, []applyCase{
		{name: "op unpins", setup: three, cmd: unpin("s-alice", "m2"), want: Result{Code: OK}, events: []EventKind{EvUnpin}, check: pinned("m3", "m1")},
		{name: "last pin", setup: three, cmd: unpin("s-alice", "m1"), want: Result{Code: OK}, events: []EventKind{EvUnpin}, check: pinned("m3", "m2")},
		{name: "not pinned", setup: three, cmd: unpin("s-alice", "m9"), want: Result{Code: ErrNotPinned}, check: pinned("m3", "m2", "m1")},
		{name: "empty msgid", setup: three, cmd: unpin("s-alice", ""), want: Result{Code: ErrNotPinned}},
		{name: "member", setup: three, cmd: unpin("s-guest", "m1"), want: Result{Code: ErrChanOpNeeded}, check: pinned("m3", "m2", "m1")},
		{name: "server operator from outside", setup: three, cmd: unpin("s-oper", "m3"), want: Result{Code: OK}, events: []EventKind{EvUnpin}, check: pinned("m2", "m1")},
		{name: "no channel", setup: world(), cmd: Unpin{Session: "s-alice", Channel: "#none", MsgID: "m1"}, want: Result{Code: ErrNoSuchChannel}},
		{name: "no session", setup: three, cmd: unpin("s-x", "m1"), want: Result{Code: ErrNoSuchSession}},
	})
}

func TestPinsKeepAnEmptyChannel(t *testing.T) {
	h := newHarness(t)
	h.mustOK(world()...)
	h.mustOK(Join{Session: "s-guest", Channel: "#g"}, Pin{Session: "s-guest", Channel: "#g", MsgID: "m1"},
		Part{Session: "s-guest", Channel: "#g"})
	h.read(func(st *State) {
		if c := st.channels["#g"]; c == nil || len(c.Pins) != 1 {
			t.Errorf("channel with pins deleted: %+v", c)
		}
	})
}

func TestPinEvents(t *testing.T) {
	h := newHarness(t)
	h.mustOK(channelWorld()...)
	h.takeEvents()
	h.mustOK(Pin{Session: "s-alice", Channel: "#c", MsgID: "m1"}, Unpin{Session: "s-alice", Channel: "#c", MsgID: "m1"})
	evs := h.takeEvents()
	if len(evs) != 2 || evs[0].Kind != EvPin || evs[1].Kind != EvUnpin {
		t.Fatalf("events %+v", evs)
	}
	for _, e := range evs {
		if e.MsgID != "m1" || e.Channel != "#c" || e.Actor.ID != "s-alice" {
			t.Errorf("event %+v", e)
		}
	}
}
