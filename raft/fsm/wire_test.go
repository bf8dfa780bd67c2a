package fsm

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestWireTypesCoverState checks that each wire type carries every encoded field of its type, in
// order and with the same type: a field added to one side only would be lost from snapshots.
func TestWireTypesCoverState(t *testing.T) {
	derived := map[string]bool{}
	for _, tc := range []struct {
		typ, wire any
	}{
		{Session{}, sessionWire{}},
		{Channel{}, channelWire{}},
		{RemoteMember{}, remoteMemberWire{}},
	} {
		typ, wire := reflect.TypeOf(tc.typ), reflect.TypeOf(tc.wire)
		var encoded []reflect.StructField
		for i := range typ.NumField() {
			if f := typ.Field(i); !derived[typ.Name()+"."+f.Name] {
				encoded = append(encoded, f)
			}
		}
		if len(encoded) != wire.NumField() {
			t.Errorf("%s has %d encoded fields, %s has %d", typ.Name(), len(encoded), wire.Name(), wire.NumField())
			continue
		}
		for i, f := range encoded {
			w := wire.Field(i)
			if !strings.EqualFold(f.Name, w.Name) || f.Type != w.Type {
				t.Errorf("%s field %d is %s %s, %s has %s %s", typ.Name(), i, f.Name, f.Type, wire.Name(), w.Name, w.Type)
			}
			if w.Tag.Get("json") == "" {
				t.Errorf("%s.%s has no json name", wire.Name(), w.Name)
			}
		}
	}
}

// TestCoreSectionsCoverState checks that the snapshot encodes every field of the state the core
// keeps, each under a section named in snapshotOrder.
func TestCoreSectionsCoverState(t *testing.T) {
	notEncoded := map[string]bool{"founded": true, "local": true, "localVersion": true, "node": true, "nickJournal": true, "sections": true}
	typ := reflect.TypeOf(State{})
	encoded := 0
	for i := range typ.NumField() {
		if !notEncoded[typ.Field(i).Name] {
			encoded++
		}
	}
	if encoded != len(coreSections) {
		t.Errorf("State has %d encoded fields, coreSections %d", encoded, len(coreSections))
	}
	for name := range coreSections {
		if !slices.Contains(snapshotOrder, name) {
			t.Errorf("core section %s has no place in snapshotOrder", name)
		}
	}
}
