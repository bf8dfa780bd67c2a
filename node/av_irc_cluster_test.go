package node

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/av"
)

// TestAVCallsFromIRCInCluster: a call started from IRC on node a, joined from IRC on node b,
// refused a second start on node b, and ended by the channel operator on node c, from IRC and
// then over REST: every participant's signalling closes, the roster ends, every node's members
// see it.
func TestAVCallsFromIRCInCluster(t *testing.T) {
	nodes := startNamedCluster(t, "avirc", avLoopback)
	a, b, c := nodes[0], nodes[1], nodes[2]
	baseA, baseB, baseC := "http://"+a.HTTPAddr(), "http://"+b.HTTPAddr(), "http://"+c.HTTPAddr()
	api := avAPI(t)
	carol, cres := login(t, c, "carol", "message-tags")
	joinChannels(t, carol, "#call") // the founder, on node c: the channel operator
	alice, ares := login(t, a, "alice", "message-tags")
	bob, bres := login(t, b, "bob", "message-tags")
	joinChannels(t, alice, "#call")
	joinChannels(t, bob, "#call")

	// Alice starts it on node a: node a hosts it; each node tells its members its own token route.
	sendLines(t, alice, "@+freeq.at/av-start TAGMSG #call")
	onC := expectAVStarted(t, carol, "alice")
	id := onC.Tags[av.TagID]
	onB := expectAVState(t, bob, "started", id, "alice")
	if onC.Tags[av.TagHost] != a.cfg.NodeName || onB.Tags[av.TagHost] != a.cfg.NodeName ||
		onB.Tags[av.TagTokenURL] != baseB+"/api/v1/av/sessions/"+id+"/token" ||
		onC.Tags[av.TagTokenURL] != baseC+"/api/v1/av/sessions/"+id+"/token" {
		t.Fatalf("started on b %v, on c %v", onB, onC)
	}
	// A second call in the channel, from node b: refused, nothing changes.
	sendLines(t, bob, "@+freeq.at/av-start TAGMSG #call")
	expectFail(t, bob, "TAGMSG", av.FailActive, "#call")
	// Bob joins from IRC on node b, then connects to node a with a token from node b.
	sendLines(t, bob, "@+freeq.at/av-join TAGMSG #call")
	expectAVState(t, carol, "joined", id, "bob")
	btok := callToken(t, baseB, bres.Token, id, http.StatusOK)
	if !strings.HasPrefix(btok.SignalingURL, "ws://"+a.HTTPAddr()+"/") {
		t.Fatalf("bob is sent to %q", btok.SignalingURL)
	}
	bc := dialCall(t, api, btok.SignalingURL, "bob", true)
	ac := dialCall(t, api, callToken(t, baseA, ares.Token, id, http.StatusOK).SignalingURL, "alice", true)
	eventually(t, "alice hears bob", func() bool { _, ok := heardOne(ac.Peer, 20); return ok })
	eventually(t, "bob hears alice", func() bool { _, ok := heardOne(bc.Peer, 20); return ok })
	if s := getSession(t, baseC, id); s.ParticipantCount != 2 || len(s.Participants) != 2 {
		t.Fatalf("roster %+v", s)
	}

	// Carol, the operator, ends it from node c.
	callsEnding.Store(ac, struct{}{})
	callsEnding.Store(bc, struct{}{})
	sendLines(t, carol, "@+freeq.at/av-end;+freeq.at/av-reason=wrap\\sup TAGMSG #call")
	waitClosed(t, ac, "alice", "wrap up")
	waitClosed(t, bc, "bob", "wrap up")
	if ac.CloseStatus() != av.CloseRemoved || bc.CloseStatus() != av.CloseRemoved {
		t.Errorf("closed with %d and %d", ac.CloseStatus(), bc.CloseStatus())
	}
	for _, m := range []struct {
		who  string
		tags map[string]string
	}{
		{"alice", expectAVState(t, alice, "ended", id, "carol").Tags},
		{"bob", expectAVState(t, bob, "ended", id, "carol").Tags},
		{"carol", expectAVState(t, carol, "ended", id, "carol").Tags},
	} {
		if m.tags[av.TagReason] != "wrap up" {
			t.Errorf("%s saw %v", m.who, m.tags)
		}
	}
	for _, base := range []string{baseA, baseB, baseC} {
		eventually(t, "the roster ends on "+base, func() bool {
			s := getSession(t, base, id)
			return s.State == "Ended" && s.EndedAt != nil && s.EndedBy != nil && *s.EndedBy == cres.DID &&
				s.ParticipantCount == 0
		})
	}
	eventually(t, "node a's forwarding unit forgets the call", func() bool { _, ok := a.SFU().Inspect("#call"); return !ok })

	// A new call on node a, ended over REST on node c by the operator; bob may not.
	next := startCall(t, baseA, ares.Token, "#call")
	nc := dialCall(t, api, callToken(t, baseA, ares.Token, next.ID, http.StatusOK).SignalingURL, "alice", true)
	expectAVState(t, carol, "joined", next.ID, "alice")
	if resp, body := httpDo(t, http.MethodPost, baseB+"/api/v1/sessions/"+next.ID+"/end", bres.Token, nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("bob ends: %d %s", resp.StatusCode, body)
	}
	callsEnding.Store(nc, struct{}{})
	resp, body := httpDo(t, http.MethodPost, baseC+"/api/v1/sessions/"+next.ID+"/end", cres.Token, strings.NewReader(`{"reason":"over"}`))
	var s av.Session
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &s) != nil || s.State != "Ended" || s.EndedAt == nil {
		t.Fatalf("carol ends over REST: %d %s", resp.StatusCode, body)
	}
	waitClosed(t, nc, "alice", "over")
	expectAVState(t, alice, "ended", next.ID, "carol")
	expectAVState(t, bob, "ended", next.ID, "carol")
}
