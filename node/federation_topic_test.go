package node

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/federation/peering"
	"github.com/palaver-chat/palaver/node/signing"
)

// scriptedHome links #fed on beta.test with a scripted peer that sorts first, so the peer is the
// channel's home. Envelopes beta sends it are handed to answer.
func scriptedHome(t *testing.T, answer func(traffic) (int, any), more ...func(*Config)) (*liar, *Node) {
	t.Helper()
	home := newLiar(t, "a-home.test") // "did:web:a-home.test" < "did:web:beta.test"
	home.inbox.Store(&answer)
	victim := startNode(t, t.TempDir(), func(c *Config) {
		c.ServerName = "beta.test"
		c.AllowPrivateDID = true
		c.Peers = []peering.Peer{{DID: home.did, BaseURL: home.server.URL, Trust: peering.TrustFull}}
		c.Links = []peering.Link{{Channel: "#fed", Peer: home.did}}
		c.FederationSendEvery = 50 * time.Millisecond
		for _, m := range more {
			m(c)
		}
	})
	home.accept(victim)
	return home, victim
}

func topicOf(t *testing.T, n *Node) string {
	t.Helper()
	resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/api/v1/channels/fed/topic", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("topic: %d %s", resp.StatusCode, body)
	}
	return string(body)
}

// TestTopicOnTheNonHomeSideIsARequest: a TOPIC on a linked channel whose home is the peer is not
// applied locally; it is sent to the home, and applied when the home's answer comes back. The
// answer may name the local user only because it carries the request this server signed, once;
// a home that refuses or a link that is down is reported to the client, and nothing changes.
func TestTopicOnTheNonHomeSideIsARequest(t *testing.T) {
	requests := make(chan peering.Topic, 16)
	var refuse, down atomic.Bool
	home, beta := scriptedHome(t, func(b traffic) (int, any) {
		if down.Load() {
			return http.StatusServiceUnavailable, map[string]string{"error": "down"}
		}
		ack := peering.Ack{OK: true}
		for _, tp := range b.Topics {
			if refuse.Load() {
				ack.Refused = map[string]string{tp.RequestID: "not-op"}
			}
			requests <- tp
		}
		return http.StatusOK, ack
	})
	next := func() peering.Topic {
		t.Helper()
		select {
		case tp := <-requests:
			return tp
		case <-testCtx(t).Done():
			t.Fatal("no request reached the home")
		}
		return peering.Topic{}
	}
	to := "did:web:beta.test"
	post := func(topics ...peering.Topic) {
		t.Helper()
		b := home.batch(to)
		b.Topics = topics
		if st := home.post(beta, home.key, b); st != http.StatusOK {
			t.Fatalf("home's envelope: status %d", st)
		}
	}

	bob, res := login(t, beta, "bob", "message-tags")
	bob.Send("JOIN #fed")
	expect(t, bob, "366", "#fed")
	bob.Send("TOPIC #fed :asked by bob")
	req := next()
	if req.RequestID == "" || req.RequestSig == "" || req.SetByDID != res.DID || req.Text != "asked by bob" || !strings.HasPrefix(req.SetBy, "bob!") {
		t.Fatalf("request = %+v", req)
	}
	if got := topicOf(t, beta); strings.Contains(got, "asked by bob") {
		t.Fatalf("the request was applied before the home answered: %s", got)
	}
	post(req) // the home's answer
	expect(t, bob, "TOPIC", "#fed", "asked by bob")

	// A local non-op on the (default +t) channel is refused here, without asking the home.
	carol, _ := guest(t, beta, "carol")
	carol.Send("JOIN #fed")
	expect(t, carol, "366", "#fed")
	carol.Send("TOPIC #fed :carol's try")
	if m := expect(t, carol, "482", "#fed"); strings.Contains(m.Params[len(m.Params)-1], "home") {
		t.Fatalf("refused by the home, not locally: %s", m.String())
	}

	bob.Send("MODE #fed +o did:web:op.a-home.test") // ops are each server's own
	expect(t, bob, "MODE", "#fed", "+o")
	// The home's own topic by a DID that is an op here applies; a replayed answer, an answer to no request, and one whose
	// request is not this server's change nothing.
	post(peering.Topic{Channel: "#fed", Text: "the home's topic", SetBy: "op!u@a-home.test", SetByDID: "did:web:op.a-home.test"})
	expect(t, bob, "TOPIC", "#fed", "the home's topic")
	forged := req
	forged.Text = "altered answer"
	selfMade := req
	selfMade.RequestID = ulid.Make().String()
	selfMade.RequestSig = signing.Sign(home.key, []byte(selfMade.RequestID))
	selfMade.Text = "a request the home made up"
	post(req, forged, selfMade, peering.Topic{Channel: "#fed", Text: "claims bob", SetBy: req.SetBy, SetByDID: res.DID})
	if got := topicOf(t, beta); !strings.Contains(got, "the home's topic") {
		t.Fatalf("a lie from the home changed the topic: %s", got)
	}

	// The home refuses: 482, nothing changed.
	refuse.Store(true)
	bob.Send("TOPIC #fed :refused by the home")
	next()
	expect(t, bob, "482", "#fed", "peer server refused")

	// The link is down: FAIL, nothing changed (and nothing is sent later).
	refuse.Store(false)
	down.Store(true)
	bob.Send("TOPIC #fed :while the link is down")
	expect(t, bob, "FAIL", "TOPIC", "TEMPORARILY_UNAVAILABLE")
	if got := topicOf(t, beta); !strings.Contains(got, "the home's topic") {
		t.Fatalf("topic after refusals: %s", got)
	}
}
