package node

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/av"
)

// TestAVCallInCluster: a call hosted by node a; a member on node b is sent to node a's
// signalling URL with a token minted on b; a PART on b ends the member's media on a; when a dies
// the call ends in the roster and a new call starts on b.
func TestAVCallInCluster(t *testing.T) {
	nodes := startNamedCluster(t, "avtest", avLoopback)
	a, b, c := nodes[0], nodes[1], nodes[2]
	baseA, baseB, baseC := "http://"+a.HTTPAddr(), "http://"+b.HTTPAddr(), "http://"+c.HTTPAddr()
	api := avAPI(t)
	alice, ares := login(t, a, "alice", "message-tags")
	bob, bres := login(t, b, "bob", "message-tags")
	carol, _ := login(t, c, "carol", "message-tags")
	joinChannels(t, alice, "#call")
	joinChannels(t, bob, "#call")
	joinChannels(t, carol, "#call")

	call := startCall(t, baseA, ares.Token, "#call")
	if call.HostNode != a.cfg.NodeName {
		t.Fatalf("host %q", call.HostNode)
	}
	expectAVState(t, carol, "started", call.ID, "alice") // rendered by node c for its member
	expectAVState(t, bob, "started", call.ID, "alice")   // node b applied the start too

	btok := callToken(t, baseB, bres.Token, call.ID, http.StatusOK)
	if !strings.HasPrefix(btok.SignalingURL, "ws://"+a.HTTPAddr()+"/") || btok.HostNode != a.cfg.NodeName {
		t.Fatalf("bob is sent to %q (host %q), want node a at %s", btok.SignalingURL, btok.HostNode, a.HTTPAddr())
	}
	// The host's URL only: node b refuses the WebSocket with a pointer to node a.
	wrong := "ws://" + b.HTTPAddr() + strings.TrimPrefix(btok.SignalingURL, "ws://"+a.HTTPAddr())
	if resp, body := httpDo(t, http.MethodGet, "http"+strings.TrimPrefix(wrong, "ws"), "", nil); resp.StatusCode != http.StatusMisdirectedRequest ||
		!strings.Contains(string(body), a.HTTPAddr()) {
		t.Fatalf("node b: %d %s", resp.StatusCode, body)
	}
	bc := dialCall(t, api, btok.SignalingURL, "bob", true)
	ac := dialCall(t, api, callToken(t, baseA, ares.Token, call.ID, http.StatusOK).SignalingURL, "alice", true)
	eventually(t, "alice hears bob", func() bool { _, ok := heardOne(ac.Peer, 20); return ok })
	eventually(t, "bob hears alice", func() bool { _, ok := heardOne(bc.Peer, 20); return ok })

	// Bob parts on node b: node a drops his media.
	callsEnding.Store(bc, struct{}{})
	sendLines(t, bob, "PART #call")
	select {
	case <-bc.Closed():
	case <-time.After(20 * time.Second):
		t.Fatal("bob's signalling still open after his PART on another node")
	}
	expectAVState(t, carol, "left", call.ID, "bob")

	// Node a dies: the call ends in the roster, everywhere; a new call starts on node b.
	callsEnding.Store(ac, struct{}{})
	a.Close()
	select {
	case <-ac.Closed():
	case <-time.After(20 * time.Second):
		t.Fatal("alice's signalling survived its host")
	}
	eventually(t, "the call of the dead host ends", func() bool {
		resp, body := httpDo(t, http.MethodGet, baseC+"/api/v1/sessions/"+call.ID, "", nil)
		return resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"state":"Ended"`) &&
			strings.Contains(string(body), "the hosting server is gone")
	})
	expectAVState(t, carol, "ended", call.ID, "")
	joinChannels(t, bob, "#call")
	next := startCall(t, baseB, bres.Token, "#call")
	if next.HostNode != b.cfg.NodeName {
		t.Fatalf("the new call is hosted by %q", next.HostNode)
	}
	eventually(t, "node c knows the new call", func() bool { // its replica may lag behind b's
		resp, _ := httpDo(t, http.MethodGet, baseC+"/api/v1/sessions/"+next.ID, "", nil)
		return resp.StatusCode == http.StatusOK
	})
	if tok := callToken(t, baseC, bres.Token, next.ID, http.StatusOK); !strings.HasPrefix(tok.SignalingURL, "ws://"+b.HTTPAddr()+"/") {
		t.Fatalf("signalling %q", tok.SignalingURL)
	}
}

// TestAVClusterOnOneUDPAddress: three nodes given one UDP address (as three nodes on one machine
// would be without --av-udp-addr each): node a's forwarding unit binds it, b's and c's cannot.
// Their health says why, and they still serve the calls node a hosts: the roster's routes, tokens
// that send their members to node a, and joining over IRC. Only what needs their own unit answers
// 503.
func TestAVClusterOnOneUDPAddress(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	shared := pc.LocalAddr().String()
	pc.Close()
	nodes := startNamedCluster(t, "avudp", func(c *Config) { c.AV.UDPAddr = shared })
	a, b := nodes[0], nodes[1]
	baseA, baseB := "http://"+a.HTTPAddr(), "http://"+b.HTTPAddr()
	if a.SFU() == nil {
		t.Skipf("node a could not bind %s either (taken meanwhile)", shared)
	}
	var health struct {
		AV      bool   `json:"av"`
		AVError string `json:"av_error"`
	}
	if _, body := httpDo(t, http.MethodGet, baseB+"/api/v1/health", "", nil); json.Unmarshal(body, &health) != nil || health.AV ||
		!strings.Contains(health.AVError, "--av-udp-addr") || !strings.Contains(health.AVError, shared) {
		t.Fatalf("node b health %s", body)
	}
	alice, ares := login(t, a, "alice", "message-tags")
	bob, bres := login(t, b, "bob", "message-tags")
	joinChannels(t, alice, "#call")
	joinChannels(t, bob, "#call")
	call := startCall(t, baseA, ares.Token, "#call")
	expectAVState(t, bob, "started", call.ID, "alice")

	for _, path := range []string{"/api/v1/channels/%23call/sessions", "/api/v1/sessions/" + call.ID, "/api/v1/sessions?channel=%23call"} {
		if resp, body := httpDo(t, http.MethodGet, baseB+path, "", nil); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), call.ID) {
			t.Fatalf("node b %s: %d %s", path, resp.StatusCode, body)
		}
	}
	tok := callToken(t, baseB, bres.Token, call.ID, http.StatusOK)
	if !strings.HasPrefix(tok.SignalingURL, "ws://"+a.HTTPAddr()+"/") || tok.HostNode != a.cfg.NodeName {
		t.Fatalf("bob is sent to %q, want node a", tok.SignalingURL)
	}
	sendLines(t, bob, "@+freeq.at/av-join TAGMSG #call")
	expectAVState(t, bob, "joined", call.ID, "bob")

	// Starting a call here needs this node's own unit.
	if resp, body := httpDo(t, http.MethodPost, baseB+"/api/v1/sessions", bres.Token, strings.NewReader(`{"channel":"#other"}`)); resp.StatusCode != http.StatusServiceUnavailable ||
		!strings.Contains(string(body), "--av-udp-addr") {
		t.Fatalf("start on node b: %d %s", resp.StatusCode, body)
	}
	joinChannels(t, bob, "#other")
	sendLines(t, bob, "@+freeq.at/av-start TAGMSG #other")
	expectFail(t, bob, "TAGMSG", av.FailUnavailable, "#other")
}
