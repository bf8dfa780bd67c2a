package irc_test

import (
	"slices"
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
		sendLines(t, guestOnly, "MARKREAD #markers "+t0) // a guest's own marker, not the DID's
		expectParams(t, guestOnly, "MARKREAD", "#markers", t0)
		sendLines(t, first, "MARKREAD #markers")
		expectParams(t, first, "MARKREAD", "#markers", t1)
	})
}

// TestIRCReadMarkersForAGuest: the specification has read markers for every client; a guest's
// are kept for its session: "*" before any, sent on JOIN before the end of names, moved forward
// only (an older time is answered with the stored one), for channels and nicks; a bad timestamp,
// "*" included, is INVALID_PARAMS; a new session starts with none.
func TestIRCReadMarkersForAGuest(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	g, _ := guest(t, n, "rmguest", "draft/read-marker")
	guest(t, n, "rmpeer")
	const t1, t0 = "timestamp=2026-01-02T03:04:05.678Z", "timestamp=2025-01-01T00:00:00.000Z"

	sendLines(t, g, "MARKREAD #rmnone")
	expectParams(t, g, "MARKREAD", "#rmnone", "*")
	sendLines(t, g, "JOIN #rm")
	msgs := readUntil(t, g, "366", func(m ircmsg.Message) bool { return m.Command == "366" })
	if got := commandsOf(msgs); !slices.Contains(got, "MARKREAD") || slices.Index(got, "MARKREAD") > slices.Index(got, "366") {
		t.Fatalf("JOIN replies %v, want MARKREAD before 366", got)
	}
	if m, _ := findMsg(msgs, "MARKREAD"); m.Param(0) != "#rm" || m.Param(1) != "*" {
		t.Fatalf("MARKREAD on JOIN %q", m.String())
	}
	for _, tc := range []struct{ send, want string }{
		{"MARKREAD #rm " + t1, t1},
		{"MARKREAD #rm " + t0, t1},
		{"MARKREAD #rm", t1},
		{"MARKREAD rmpeer " + t0, t0},
		{"MARKREAD RMPEER", t0},
	} {
		sendLines(t, g, tc.send)
		if m := expect(t, g, "MARKREAD"); m.Param(1) != tc.want {
			t.Fatalf("%s: %q, want %s", tc.send, m.String(), tc.want)
		}
	}
	for _, bad := range []string{"*", "timestamp=not-a-timestamp", "2026-01-02T03:04:05.678Z"} {
		sendLines(t, g, "MARKREAD #rm "+bad)
		expect(t, g, "FAIL", "MARKREAD", "INVALID_PARAMS")
	}
	sendLines(t, g, "PART #rm", "JOIN #rm")
	expectParams(t, g, "MARKREAD", "#rm", t1)

	again, _ := guest(t, n, "rmguest2", "draft/read-marker")
	sendLines(t, again, "MARKREAD #rm")
	expectParams(t, again, "MARKREAD", "#rm", "*")
}
