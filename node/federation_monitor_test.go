package node

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/palaver-chat/palaver/federation/peering"
)

// TestIRCMonitorFederatedUsers: a user of a peer server is online for MONITOR while this server
// knows of it through federation presence (it is in a linked channel): 730 with its hostmask when
// it first appears and in MONITOR S, 731 when it parts its last linked channel, quits, changes
// nick, or when the link to its server drops.
func TestIRCMonitorFederatedUsers(t *testing.T) {
	var down atomic.Bool
	home, beta := scriptedHome(t, func(b traffic) (int, any) {
		if down.Load() {
			return http.StatusServiceUnavailable, map[string]string{"error": "down"}
		}
		return http.StatusOK, peering.Ack{OK: true}
	}, func(c *Config) {
		c.Links = append(c.Links, peering.Link{Channel: "#fed2", Peer: "did:web:a-home.test"})
	})
	post := func(ps ...peering.Presence) {
		t.Helper()
		b := home.batch("did:web:beta.test")
		b.Presence = ps
		if st := home.post(beta, home.key, b); st != http.StatusOK {
			t.Fatalf("envelope: status %d", st)
		}
	}
	member, _ := guest(t, beta, "fedmember")
	joinChannels(t, member, "#fed")
	w, _ := guest(t, beta, "fedwatcher")
	sendLines(t, w, "MONITOR + carol,carol2")
	expectParams(t, w, "731", "fedwatcher", "carol,carol2")

	carol := peering.Presence{Kind: peering.PresenceJoin, Channel: "#fed", Nick: "carol", User: "c", DID: "did:web:carol.a-home.test"}
	post(carol)
	expectParams(t, w, "730", "fedwatcher", "carol!c@a-home.test")
	sendLines(t, w, "MONITOR S")
	expectParams(t, w, "730", "fedwatcher", "carol!c@a-home.test")
	expectParams(t, w, "731", "fedwatcher", "carol2")

	post(peering.Presence{Kind: peering.PresencePart, Channel: "#fed", Nick: "carol"})
	expectParams(t, w, "731", "fedwatcher", "carol")
	post(carol)
	expectParams(t, w, "730", "fedwatcher", "carol!c@a-home.test")
	post(peering.Presence{Kind: peering.PresenceNick, Nick: "carol", NewNick: "carol2"})
	expectParams(t, w, "731", "fedwatcher", "carol")
	expectParams(t, w, "730", "fedwatcher", "carol2!c@a-home.test")
	post(peering.Presence{Kind: peering.PresenceQuit, Nick: "carol2", Reason: "bye"})
	expectParams(t, w, "731", "fedwatcher", "carol2")

	// Only the first linked channel and the last count: a second one changes nothing.
	sendLines(t, w, "MONITOR - carol2")
	drain(t, member)
	post(carol)
	expectParams(t, w, "730", "fedwatcher", "carol!c@a-home.test")
	second := carol
	second.Channel = "#fed2"
	post(second, peering.Presence{Kind: peering.PresencePart, Channel: "#fed", Nick: "carol"})
	expectFrom(t, member, "carol", "PART", "#fed")
	sendLines(t, w, "MONITOR S")
	expectParams(t, w, "730", "fedwatcher", "carol!c@a-home.test")
	for _, m := range drain(t, w) {
		if m.Command == "730" || m.Command == "731" {
			t.Fatalf("a second linked channel changed the status: %s", m.String())
		}
	}
	post(carol)
	expectFrom(t, member, "carol", "JOIN", "#fed")

	// The link drops: the peer's users are no longer known here.
	down.Store(true)
	expectParams(t, w, "731", "fedwatcher", "carol")
	sendLines(t, w, "MONITOR S")
	if m := expect(t, w, "731"); !strings.Contains(m.Param(1), "carol") {
		t.Fatalf("MONITOR S after the link dropped: %s", m.String())
	}
}
