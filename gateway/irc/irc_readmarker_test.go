package irc_test

import (
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// TestIRCReadMarkersFollowTheDID: MARKREAD (draft/read-marker) moves a DID's marker forward only,
// answers with the stored marker, tells the DID's other sessions on other nodes, and is sent on
// JOIN to a client with the capability.
func TestIRCReadMarkersFollowTheDID(t *testing.T) {
	nodes := startCluster(t)
	me := newEd25519(t)
	caps := []string{"draft/read-marker", "echo-message"}
	first, _ := loginAs(t, nodes[0], me, "marker", caps...)
	second, _ := loginAs(t, nodes[1], me, "marker2", caps...)
	guestOnly, _ := guest(t, nodes[2], "markerguest", "draft/read-marker")

	const t1, t0 = "timestamp=2026-01-02T03:04:05.678Z", "timestamp=2025-01-01T00:00:00.000Z"
	steps := []struct {
		name string
		send string
		want []string // the MARKREAD both sessions get
	}{
		{"nothing stored yet", "MARKREAD #markers", nil},
		{"set", "MARKREAD #markers " + t1, []string{"#markers", t1}},
		{"an older time does not move it", "MARKREAD #markers " + t0, []string{"#markers", t1}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			sendLines(t, first, st.send)
			if st.want == nil {
				expectParams(t, first, "MARKREAD", "#markers", "*")
				return
			}
			expectParams(t, first, "MARKREAD", st.want...)
		})
	}
	// The other session, on another node, heard the move once.
	expectParams(t, second, "MARKREAD", "#markers", t1)
	// Joining sends the marker before the names.
	sendLines(t, second, "JOIN #markers")
	msgs := readUntil(t, second, "366", func(m ircmsg.Message) bool { return m.Command == "366" })
	if _, ok := findMsg(msgs, "MARKREAD", "#markers", t1); !ok {
		t.Fatalf("no MARKREAD on JOIN: %v", lines(msgs))
	}
	t.Run("bad input changes nothing", func(t *testing.T) {
		sendLines(t, first, "MARKREAD #markers yesterday", "MARKREAD")
		expect(t, first, "FAIL", "MARKREAD", "INVALID_PARAMS")
		expect(t, first, "FAIL", "MARKREAD", "NEED_MORE_PARAMS")
		sendLines(t, guestOnly, "MARKREAD #markers "+t1)
		expect(t, guestOnly, "FAIL", "MARKREAD", "ACCOUNT_REQUIRED")
		sendLines(t, first, "MARKREAD #markers")
		expectParams(t, first, "MARKREAD", "#markers", t1)
	})
}
