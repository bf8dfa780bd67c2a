package fsm

import "testing"

// TestRegisterRefusesTakenNames: a module cannot take a command number or a section name that is
// already taken; the program stops when it loads rather than apply one log two ways.
func TestRegisterRefusesTakenNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Module
	}{
		{"a core command number", Module{Section: NewSection[struct{}]("test-one"),
			Commands: map[CommandType]CommandSpec{TypeJoin: Handle("join-again", 0, (*Applier).join)}}},
		{"a core section name", Module{Section: NewSection[struct{}]("sessions")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("registered")
				}
			}()
			Register(tc.m)
		})
	}
}

// TestSectionAbsentUntilMade: a module's section is nil, and left out of snapshots, until a
// command makes it.
func TestSectionAbsentUntilMade(t *testing.T) {
	type counter struct{ N int }
	sec := NewSection[counter]("test-counter")
	st := NewState()
	if sec.Of(st) != nil {
		t.Fatal("a section exists before it is made")
	}
	a := NewApplier(st, Envelope{})
	sec.Make(a).N++
	sec.Make(a).N++
	if got := sec.Of(st); got == nil || got.N != 2 {
		t.Fatalf("section %+v", got)
	}
}
