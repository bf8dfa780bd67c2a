package node

import (
	"net/http"
	"testing"

	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/federation/peering"
)

// TestPeerAllowPrivate: a peer on a loopback address is unreachable (its did:web document cannot
// be read, so its envelopes are refused) unless the operator turned on PeerAllowPrivate.
func TestPeerAllowPrivate(t *testing.T) {
	tests := []struct {
		name   string
		allow  bool
		status int
	}{
		{"the SSRF guard refuses a private peer by default", false, http.StatusUnauthorized},
		{"--peer-allow-private reaches it", true, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			peer := newLiar(t, "private.test")
			n := startNode(t, t.TempDir(), func(c *Config) {
				c.ServerName = "beta.test"
				c.PeerAllowPrivate = tt.allow
				c.Peers = []peering.Peer{{DID: peer.did, BaseURL: peer.server.URL, Trust: peering.TrustFull}}
				c.Links = []peering.Link{{Channel: "#fed", Peer: peer.did}}
			})
			b := peer.batch("did:web:beta.test")
			b.Events = []exchange.Event{peer.event("did:web:someone.private.test", "someone", "hello")}
			if got := peer.send(n, peer.key, b); got != tt.status {
				t.Fatalf("status %d, want %d", got, tt.status)
			}
		})
	}
}
