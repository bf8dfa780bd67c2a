package irc

import (
	"strings"
	"testing"
)

func TestTagDataTooLong(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
		want bool
	}{
		{"no tags", "PRIVMSG #a :" + strings.Repeat("x", 5000), false},
		{"4094 bytes", "@" + strings.Repeat("a", 4094) + " TAGMSG #a", false},
		{"4095 bytes", "@" + strings.Repeat("a", 4095) + " TAGMSG #a", true},
		{"tags alone, 4094", "@" + strings.Repeat("a", 4094), false},
		{"tags alone, 4095", "@" + strings.Repeat("a", 4095), true},
		{"empty", "", false},
		{"empty tags", "@ PING x", false},
	} {
		if got := tagDataTooLong([]byte(tc.line)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
