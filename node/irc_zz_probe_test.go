package node

import (
	"testing"
	"unicode/utf8"
)

func TestIRCZZProbeUTF8(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	a, _ := guest(t, n, "utfa")
	b, _ := guest(t, n, "utfb", "away-notify")
	joinChannels(t, a, "#utf", "#utf2")
	joinChannels(t, b, "#utf", "#utf2")
	sendLines(t, a, "AWAY :away \xff", "PART #utf :part \xff", "KICK #utf2 utfb :kick \xff", "QUIT :quit \xff")
	expect(t, b, "QUIT")
	for _, m := range b.Seen() {
		t.Logf("b: %q valid=%v", m.String(), utf8.ValidString(m.String()))
	}
}
