package fsm

import (
	"reflect"
	"strings"
	"testing"
)

// TestWireTypesCoverState checks that each wire type carries every encoded field of its type, in
// order and with the same type: a field added to one side only would be lost from snapshots.
func TestWireTypesCoverState(t *testing.T) {
	derived := map[string]bool{"State.founded": true, "State.local": true, "State.node": true}
	for _, tc := range []struct {
		typ, wire any
	}{
		{State{}, stateWire{}},
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
