package node

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// armedFaults makes the point stored in armed panic once (armed is then emptied).
func armedFaults(armed *atomic.Value) *Faults {
	armed.Store("")
	return &Faults{PanicAt: func(point string) bool { return armed.CompareAndSwap(point, "") }}
}

// fired waits until the panic armed at point has happened.
func fired(t *testing.T, armed *atomic.Value, point string) {
	t.Helper()
	eventually(t, "the injected panic at "+point, func() bool { return armed.Load() == "" })
}

// historyHas reports whether channel's REST history on n holds a message with text.
func historyHas(t *testing.T, n *Node, channel, text string) bool {
	resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/api/v1/channels/"+channel+"/history?limit=200", "", nil)
	return resp.StatusCode == 200 && strings.Contains(string(body), `"`+text+`"`)
}

// TestExchangePanicsLeaveTheClusterServing: a panic injected once in each of the event exchange's
// loops (a stream, the pull loop, a delivery to local sessions) ends nothing: the message in
// flight still reaches every node's store, the next ones cross every way and are delivered live,
// and every node's pull loop still moves its cursors.
func TestExchangePanicsLeaveTheClusterServing(t *testing.T) {
	var armed atomic.Value
	nodes := startNamedCluster(t, "test", func(c *Config) { c.Faults = armedFaults(&armed) })
	a, b, c := nodes[0], nodes[1], nodes[2]
	alice, _ := guest(t, a, "alice")
	joinChannels(t, alice, "#x")
	bob, _ := guest(t, b, "bob")
	joinChannels(t, bob, "#x")
	carol, _ := guest(t, c, "carol")
	joinChannels(t, carol, "#x")

	for _, point := range []string{PanicExchangePush, PanicExchangePull, PanicExchangeDeliver} {
		t.Run(point, func(t *testing.T) {
			armed.Store(point)
			during := "during " + point
			switch point {
			case PanicExchangePull: // healthy streams carry every log: a Kick makes the nodes pull
				eventually(t, "the injected panic at "+point, func() bool {
					for _, n := range nodes {
						n.exchange.Kick()
					}
					return armed.Load() == ""
				})
			default: // a push of this message, or its delivery on node b or c, panics
				sendLines(t, alice, "PRIVMSG #x :"+during)
				fired(t, &armed, point)
				// Stored everywhere all the same (a push that panicked is left to the pull).
				for _, n := range []*Node{b, c} {
					eventually(t, during+" stored on "+n.cfg.NodeName, func() bool { return historyHas(t, n, "x", during) })
				}
			}
			// Every node still pulls from every other (a pull, unlike a push, moves the cursor).
			before := pullCursors(t, nodes)
			after := "after " + point
			users := []*ircclient.Client{alice, bob, carol}
			for i, from := range users {
				line := after + " from " + string(rune('a'+i))
				sendLines(t, from, "PRIVMSG #x :"+line)
				for _, to := range users {
					if to != from {
						expect(t, to, "PRIVMSG", line)
					}
				}
			}
			eventually(t, "every pull cursor to move", func() bool {
				now := pullCursors(t, nodes)
				for k, v := range before {
					if now[k] <= v {
						return false
					}
				}
				return true
			})
		})
	}
}

// pullCursors is each node's pull cursor for each other node ("puller<-origin").
func pullCursors(t *testing.T, nodes []*Node) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, n := range nodes {
		for _, origin := range nodes {
			if origin == n {
				continue
			}
			seq, err := exchange.ReadCursor(testCtx(t), n.events, exchange.CursorKey{Dir: exchange.In, Log: exchange.LogMessages, Peer: origin.cfg.NodeName})
			if err != nil {
				t.Fatal(err)
			}
			out[n.cfg.NodeName+"<-"+origin.cfg.NodeName] = seq
		}
	}
	return out
}

// TestFederationPanicsLeaveTheLinkServing: a panic injected once in a federation outbox's send,
// and once while applying a peer's message, ends nothing: the envelope is sent again, the next
// message crosses and is delivered live, and both servers keep serving.
func TestFederationPanicsLeaveTheLinkServing(t *testing.T) {
	var armed atomic.Value
	betaURL := newForwarder(t)
	alpha := startNode(t, t.TempDir(), func(c *Config) {
		federated("alpha.test", betaDID, betaURL.addr())(c)
		c.Faults = armedFaults(&armed)
	})
	beta := startNode(t, t.TempDir(), func(c *Config) {
		federated("beta.test", alphaDID, alpha.HTTPAddr())(c)
		c.Faults = armedFaults(&armed)
	})
	betaURL.to(beta)
	alice, _ := guest(t, alpha, "alice")
	joinChannels(t, alice, "#fed")
	bob, _ := guest(t, beta, "bob")
	joinChannels(t, bob, "#fed")
	sendLines(t, alice, "PRIVMSG #fed :link up")
	expect(t, bob, "PRIVMSG", "link up")

	t.Run("outbox send", func(t *testing.T) {
		// The outbox's envelopes carry presence (messages travel on the stream).
		armed.Store(PanicFederationSend)
		sendLines(t, alice, "PART #fed :during the send panic")
		fired(t, &armed, PanicFederationSend)
		expect(t, bob, "PART", "#fed", "during the send panic") // sent again after the backoff
		sendLines(t, alice, "JOIN #fed")
		expect(t, bob, "JOIN", "#fed")
		sendLines(t, bob, "PRIVMSG #fed :reply after the send panic")
		expect(t, alice, "PRIVMSG", "reply after the send panic")
	})
	t.Run("inbound apply", func(t *testing.T) {
		armed.Store(PanicFederationApply)
		sendLines(t, alice, "PRIVMSG #fed :during the apply panic")
		fired(t, &armed, PanicFederationApply) // on beta: the message is stored, its delivery panicked
		sendLines(t, alice, "PRIVMSG #fed :after the apply panic")
		expect(t, bob, "PRIVMSG", "after the apply panic")
		sendLines(t, bob, "PRIVMSG #fed :reply after the apply panic")
		expect(t, alice, "PRIVMSG", "reply after the apply panic")
	})
}
