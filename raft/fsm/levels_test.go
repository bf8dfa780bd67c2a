package fsm

import (
	"maps"
	"slices"
	"testing"
)

// firstReleaseTypes are the command types v0.1.0 registered (its commands table, read from the
// tagged release): exactly these are level 0.
var firstReleaseTypes = []CommandType{
	1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,
	32, 33, 34, 35, 40, 41, 42, 43, 44, 50, 51, 52, 53, 54, 55, 56,
	60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72,
}

// TestCommandLevelsCoverRegistry fails for a registered command type without a feature level (or a
// level for a type not registered), and checks the level of each type against the releases.
func TestCommandLevelsCoverRegistry(t *testing.T) {
	for typ, sp := range commands {
		level, ok := commandLevels[typ]
		switch {
		case !ok:
			t.Errorf("command type %d (%s) has no feature level in commandLevels", typ, sp.name)
		case level < 0 || level > Level:
			t.Errorf("command type %d (%s) has level %d, outside 0..%d", typ, sp.name, level, Level)
		case slices.Contains(firstReleaseTypes, typ) != (level == 0):
			t.Errorf("command type %d (%s) has level %d; level 0 is for the types of v0.1.0 only", typ, sp.name, level)
		}
	}
	for typ := range commandLevels {
		if _, ok := commands[typ]; !ok {
			t.Errorf("commandLevels lists type %d, which is not registered", typ)
		}
	}
	for _, typ := range firstReleaseTypes {
		if _, ok := commands[typ]; !ok {
			t.Errorf("type %d of v0.1.0 is no longer registered", typ)
		}
	}
	top := slices.Max(slices.Collect(maps.Values(commandLevels)))
	if top != Level {
		t.Errorf("the highest command level is %d, Level is %d", top, Level)
	}
}

func TestEntryLevel(t *testing.T) {
	encode := func(cmd Command) []byte {
		data, err := Encode(cmd, "rid", "n1", 1)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for _, tc := range []struct {
		name  string
		entry []byte
		want  int
	}{
		{"empty", nil, 0},
		{"join (v0.1.0)", encode(Join{Session: "s1", Channel: "#c"}), 0},
		{"set invisible", encode(SetInvisible{Session: "s1", Invisible: true}), 1},
		{"set node key", encode(SetNodeKey{Node: "n1", Key: make([]byte, NodeKeySize)}), 1},
		{"register account", encode(RegisterAccount{}), 1},
		{"unknown type", []byte{250, 0, '{', '}'}, Level + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := EntryLevel(tc.entry); got != tc.want {
				t.Errorf("EntryLevel = %d, want %d", got, tc.want)
			}
		})
	}
	for _, cmd := range sampleCommands() {
		if got, want := EntryLevel(encode(cmd)), CommandLevel(cmd); got != want {
			t.Errorf("%T: EntryLevel %d, CommandLevel %d", cmd, got, want)
		}
	}
}
