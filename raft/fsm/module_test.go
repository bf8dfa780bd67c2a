package fsm

import (
	"slices"
	"strconv"
	"testing"
)

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

// TestLifecycleHooks: the modules' hooks are called, in the order of their section names, when a
// session ends, a channel is renamed and a channel is deleted, after the core's change.
func TestLifecycleHooks(t *testing.T) {
	var calls []string
	hook := func(name string) Module {
		return Module{
			Section: NewSection[struct{}](name),
			SessionEnded: func(a *Applier, se SessionRef) {
				calls = append(calls, name+" ended "+se.ID+" gone="+strconv.FormatBool(!sessionExists(a.State(), se.ID)))
			},
			ChannelDeleted: func(a *Applier, ch string) {
				calls = append(calls, name+" deleted "+ch+" gone="+strconv.FormatBool(!a.State().ChannelExists(ch)))
			},
			ChannelRenamed: func(a *Applier, old, ch string) {
				calls = append(calls, name+" renamed "+old+" "+ch+" moved="+strconv.FormatBool(a.State().ChannelExists(ch)))
			},
		}
	}
	for _, name := range []string{"test-hook-b", "test-hook-a"} {
		Register(hook(name))
		t.Cleanup(func() {
			delete(modules, name)
			hooked = slices.DeleteFunc(hooked, func(m Module) bool { return m.Section.sectionName() == name })
		})
	}
	h := newHarness(t)
	h.mustOK(world()...)
	h.mustOK(Join{Session: "s-guest", Channel: "#c"}, RenameChannel{Session: "s-guest", Channel: "#c", NewName: "#d"},
		Part{Session: "s-guest", Channel: "#d"}, EndSession{Session: "s-guest"})
	want := []string{
		"test-hook-a renamed #c #d moved=true", "test-hook-b renamed #c #d moved=true",
		"test-hook-a deleted #d gone=true", "test-hook-b deleted #d gone=true",
		"test-hook-a ended s-guest gone=true", "test-hook-b ended s-guest gone=true",
	}
	if !slices.Equal(calls, want) {
		t.Errorf("hook calls\n got %q\nwant %q", calls, want)
	}
}

// sessionExists reports whether session id is in st.
func sessionExists(st *State, id string) bool {
	_, ok := st.Session(id)
	return ok
}
