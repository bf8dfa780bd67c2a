package node

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/pion/webrtc/v4"

	"github.com/palaver-chat/palaver/gateway/av"
	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/avclient"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

func avLoopback(c *Config) { c.AV.UDPAddr, c.AV.AllowPrivateCandidates = "127.0.0.1:0", true }

func avAPI(t *testing.T) *webrtc.API {
	t.Helper()
	api, err := avclient.LoopbackAPI()
	if err != nil {
		t.Fatal(err)
	}
	return api
}

// startCall starts a call in channel on the node at base and returns it.
func startCall(t *testing.T, base, token, channel string) av.Session {
	t.Helper()
	resp, body := httpDo(t, http.MethodPost, base+"/api/v1/sessions", token, strings.NewReader(`{"channel":"`+channel+`"}`))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("start %s: %d %s", channel, resp.StatusCode, body)
	}
	var s av.Session
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// callToken gets a signalling token; it fails the test unless the answer is want.
func callToken(t *testing.T, base, bearer, id string, want int) av.TokenResponse {
	t.Helper()
	resp, body := httpDo(t, http.MethodGet, base+"/api/v1/av/sessions/"+id+"/token", bearer, nil)
	if resp.StatusCode != want {
		t.Fatalf("token for %s: %d %s, want %d", id, resp.StatusCode, body, want)
	}
	var tok av.TokenResponse
	if want == http.StatusOK {
		if err := json.Unmarshal(body, &tok); err != nil {
			t.Fatal(err)
		}
	} else {
		var e struct{ Error, Message string }
		if err := json.Unmarshal(body, &e); err != nil || e.Message == "" {
			t.Fatalf("not an Error object: %s", body)
		}
	}
	return tok
}

func dialCall(t *testing.T, api *webrtc.API, signalingURL, name string, publish bool) *avclient.Conn {
	t.Helper()
	c, err := avclient.Dial(testCtx(t), api, signalingURL, name, publish)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Peer.Close)
	go func() {
		for err := range c.Errors() {
			if _, ending := callsEnding.Load(c); ending {
				continue // the test ends this call's host or membership: a write may meet a closed socket
			}
			t.Errorf("%s: %v", name, err)
		}
	}()
	return c
}

// callsEnding holds the connections whose end a test causes on purpose (their host closes, or the
// participant leaves), so an error from a write racing that end is expected, not a failure.
var callsEnding sync.Map

// expectAVState waits for the call TAGMSG of state about call id.
func expectAVState(t *testing.T, c *ircclient.Client, state, id, actor string) ircmsg.Message {
	t.Helper()
	msgs := readUntil(t, c, "av-state "+state, func(m ircmsg.Message) bool {
		return m.Command == "TAGMSG" && m.Tags[av.TagState] == state && m.Tags[av.TagID] == id &&
			(actor == "" || m.Tags[av.TagActor] == actor)
	})
	return msgs[len(msgs)-1]
}

func getSession(t *testing.T, base, id string) av.Session {
	t.Helper()
	resp, body := httpDo(t, http.MethodGet, base+"/api/v1/sessions/"+id, "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("session %s: %d %s", id, resp.StatusCode, body)
	}
	var s av.Session
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func participant(s av.Session, nick string) (av.Participant, bool) {
	for _, p := range s.Participants {
		if p.Nick == nick {
			return p, true
		}
	}
	return av.Participant{}, false
}

// onlyStream is the one publisher a peer hears from, once it has heard enough of it.
func heardOne(p *avclient.Peer, min int) (string, bool) {
	streams := p.Streams()
	if len(streams) != 1 {
		return "", false
	}
	return streams[0], p.Count(streams[0], "video") >= min && p.Count(streams[0], "audio") >= min
}

func TestAVCallOverRealSockets(t *testing.T) {
	n := startNode(t, t.TempDir(), avLoopback)
	base := "http://" + n.HTTPAddr()
	api := avAPI(t)
	alice, ares := login(t, n, "alice", "message-tags")
	bob, bres := login(t, n, "bob", "message-tags")
	carol, cres := login(t, n, "carol", "message-tags")
	_, dres := login(t, n, "dave", "message-tags")
	joinChannels(t, alice, "#call", "#other")
	joinChannels(t, bob, "#call")
	joinChannels(t, carol, "#call")

	var health map[string]any
	if _, body := httpDo(t, http.MethodGet, base+"/api/v1/health", "", nil); json.Unmarshal(body, &health) != nil || health["av"] != true {
		t.Fatalf("health %s", body)
	}

	call := startCall(t, base, ares.Token, "#call")
	if call.State != "Active" || call.Channel != "#call" || call.HostNode != n.cfg.NodeName || call.CreatedByNick != "alice" {
		t.Fatalf("call %+v", call)
	}
	expectAVState(t, carol, "started", call.ID, "alice")
	for _, tc := range []struct {
		name, token, body string
		want              int
	}{
		{"second call", bres.Token, `{"channel":"#call"}`, http.StatusConflict},
		{"non-member", dres.Token, `{"channel":"#call"}`, http.StatusForbidden},
		{"no bearer", "", `{"channel":"#call"}`, http.StatusUnauthorized},
		{"no such channel", ares.Token, `{"channel":"#nowhere"}`, http.StatusNotFound},
		{"bad name", ares.Token, `{"channel":"#` + strings.Repeat("x", 80) + `"}`, http.StatusBadRequest},
		{"bad body", ares.Token, `{"channel":`, http.StatusBadRequest},
	} {
		t.Run("start "+tc.name, func(t *testing.T) {
			resp, body := httpDo(t, http.MethodPost, base+"/api/v1/sessions", tc.token, strings.NewReader(tc.body))
			if resp.StatusCode != tc.want || !strings.Contains(string(body), `"message"`) {
				t.Fatalf("%d %s, want %d", resp.StatusCode, body, tc.want)
			}
		})
	}

	// Tokens: members only, one call only.
	callToken(t, base, dres.Token, call.ID, http.StatusForbidden)
	callToken(t, base, "", call.ID, http.StatusUnauthorized)
	callToken(t, base, ares.Token, "01NOSUCHCALL", http.StatusNotFound)
	atok := callToken(t, base, ares.Token, call.ID, http.StatusOK)
	if !strings.HasPrefix(atok.SignalingURL, "ws://"+n.HTTPAddr()+"/api/v1/av/sessions/"+call.ID+"/ws?token=") || atok.HostNode != n.cfg.NodeName {
		t.Fatalf("token %+v", atok)
	}
	other := startCall(t, base, ares.Token, "#other")
	otok := callToken(t, base, ares.Token, other.ID, http.StatusOK)
	wsBase := "ws://" + n.HTTPAddr() + "/api/v1/av/sessions/"
	for _, tc := range []struct {
		name, url string
		want      int
	}{
		{"token of another call", wsBase + call.ID + "/ws?token=" + url.QueryEscape(otok.Token), http.StatusForbidden},
		{"no token", wsBase + call.ID + "/ws", http.StatusUnauthorized},
		{"forged token", wsBase + call.ID + "/ws?token=" + url.QueryEscape(strings.Replace(atok.Token, ".", ".x", 1)), http.StatusUnauthorized},
		{"ended call", wsBase + "01NOSUCHCALL/ws?token=" + url.QueryEscape(atok.Token), http.StatusForbidden},
	} {
		t.Run("signalling "+tc.name, func(t *testing.T) {
			_, resp, err := websocket.Dial(testCtx(t), tc.url, nil)
			if err == nil || resp == nil || resp.StatusCode != tc.want {
				t.Fatalf("dial: %v %v, want %d", err, resp, tc.want)
			}
		})
	}
	if resp, _ := httpDo(t, http.MethodGet, "http"+strings.TrimPrefix(atok.SignalingURL, "ws"), "", nil); resp.StatusCode != http.StatusUpgradeRequired {
		t.Fatalf("plain GET of the WebSocket: %d", resp.StatusCode)
	}

	// Alice and Bob connect and publish; each hears the other.
	ac := dialCall(t, api, atok.SignalingURL, "alice", true)
	bc := dialCall(t, api, callToken(t, base, bres.Token, call.ID, http.StatusOK).SignalingURL, "bob", true)
	joined := map[string]bool{}
	readUntil(t, carol, "alice and bob joined", func(m ircmsg.Message) bool {
		if m.Command == "TAGMSG" && m.Tags[av.TagState] == "joined" && m.Tags[av.TagID] == call.ID {
			joined[m.Tags[av.TagActor]] = true
		}
		return joined["alice"] && joined["bob"]
	})
	var bobStream string
	eventually(t, "alice hears bob", func() bool { s, ok := heardOne(ac.Peer, 30); bobStream = s; return ok })
	eventually(t, "bob hears alice", func() bool { _, ok := heardOne(bc.Peer, 30); return ok })
	if s := getSession(t, base, call.ID); s.ParticipantCount != 2 {
		t.Fatalf("roster %+v", s)
	}
	// The assistance tool compares the roster with the wire: both participants connected, tracks
	// forwarded, nothing missing or phantom.
	var facts string
	eventually(t, "diagnose_av_session sees both participants forwarding", func() bool {
		env, raw := callTool(t, n, "/agent/tools/diagnose_av_session", cres.Token, map[string]any{"channel": "#call"})
		facts = raw
		return env.Diagnosis.Code == "AV_SESSION_HEALTHY" && strings.Contains(raw, "alice sends") &&
			strings.Contains(raw, "bob sends") && strings.Contains(raw, "ICE connected")
	})
	if strings.Contains(facts, "MISSING_MGR_SLOT") || !strings.Contains(facts, call.ID) {
		t.Fatalf("diagnose_av_session: %s", facts)
	}
	var chans av.ChannelSessions
	if _, body := httpDo(t, http.MethodGet, base+"/api/v1/channels/%23call/sessions", "", nil); json.Unmarshal(body, &chans) != nil ||
		chans.Active == nil || chans.Active.ID != call.ID {
		t.Fatalf("channel sessions %s", body)
	}

	// KICK: Bob's media stops at once, his signalling closes with the reason, the roster says so.
	sendLines(t, alice, "KICK #call bob :enough")
	select {
	case <-bc.Closed():
	case <-time.After(20 * time.Second):
		t.Fatal("bob's signalling still open after the kick")
	}
	if bc.CloseStatus() != av.CloseRemoved || bc.CloseReason() != "left the channel" {
		t.Errorf("bob closed with %d %q", bc.CloseStatus(), bc.CloseReason())
	}
	eventually(t, "bob's tracks end at alice", func() bool { return ac.Ended(bobStream) == 2 })
	expectAVState(t, carol, "left", call.ID, "bob")
	if p, ok := participant(getSession(t, base, call.ID), "bob"); !ok || p.LeftAt == nil || p.Reason != "left the channel" {
		t.Errorf("bob in the roster: %+v %v", p, ok)
	}
	callToken(t, base, bres.Token, call.ID, http.StatusForbidden)

	// A ban removes Carol the same way.
	cc := dialCall(t, api, callToken(t, base, cres.Token, call.ID, http.StatusOK).SignalingURL, "carol", false)
	expectAVState(t, alice, "joined", call.ID, "carol")
	eventually(t, "carol hears alice", func() bool { _, ok := heardOne(cc.Peer, 10); return ok })
	sendLines(t, alice, "MODE #call +b carol!*@*")
	select {
	case <-cc.Closed():
	case <-time.After(20 * time.Second):
		t.Fatal("carol's signalling still open after the ban")
	}
	if cc.CloseReason() != "banned from the channel" {
		t.Errorf("carol closed with %q", cc.CloseReason())
	}

	// The last one out ends the call; a new one can start.
	ac.Leave()
	expectAVState(t, alice, "ended", call.ID, "")
	ended := getSession(t, base, call.ID)
	if ended.State != "Ended" || ended.EndedAt == nil || ended.ParticipantCount != 0 {
		t.Fatalf("ended call %+v", ended)
	}
	if _, body := httpDo(t, http.MethodGet, base+"/api/v1/channels/%23call/sessions", "", nil); json.Unmarshal(body, &chans) != nil ||
		chans.Active != nil || len(chans.Recent) != 1 || chans.Recent[0].ID != call.ID {
		t.Fatalf("channel sessions %s", body)
	}
	eventually(t, "the forwarding unit forgets the call", func() bool { _, ok := n.SFU().Inspect("#call"); return !ok })
	startCall(t, base, ares.Token, "#call")
}

func TestAVOffAnswers503(t *testing.T) {
	n := startNode(t, t.TempDir(), func(c *Config) { c.AV.Off = true })
	base := "http://" + n.HTTPAddr()
	alice, ares := login(t, n, "alice", "message-tags")
	joinChannels(t, alice, "#c")
	sendLines(t, alice, "@+freeq.at/av-start TAGMSG #c")
	expectFail(t, alice, "TAGMSG", av.FailUnavailable, "#c")
	var health map[string]any
	if _, body := httpDo(t, http.MethodGet, base+"/api/v1/health", "", nil); json.Unmarshal(body, &health) != nil || health["av"] != false {
		t.Fatalf("health %s", body)
	}
	// The roster's routes answer as usual; those that need this node's forwarding unit, 503.
	for _, tc := range []struct {
		method, path, token, body string
		want                      int
	}{
		{http.MethodGet, "/api/v1/sessions", "", "", http.StatusOK},
		{http.MethodPost, "/api/v1/sessions", ares.Token, `{"channel":"#c"}`, http.StatusServiceUnavailable},
		{http.MethodGet, "/api/v1/sessions/01ARZ3NDEKTSV4RRFFQ69G5FAV", "", "", http.StatusNotFound},
		{http.MethodPost, "/api/v1/sessions/01ARZ3NDEKTSV4RRFFQ69G5FAV/end", ares.Token, "", http.StatusNotFound},
		{http.MethodGet, "/api/v1/channels/%23c/sessions", "", "", http.StatusOK},
		{http.MethodGet, "/api/v1/av/sessions/01ARZ3NDEKTSV4RRFFQ69G5FAV/token", ares.Token, "", http.StatusNotFound},
		{http.MethodGet, "/api/v1/av/sessions/01ARZ3NDEKTSV4RRFFQ69G5FAV/ws?token=x", "", "", http.StatusServiceUnavailable},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			var body *strings.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			var resp *http.Response
			var data []byte
			if body != nil {
				resp, data = httpDo(t, tc.method, base+tc.path, tc.token, body)
			} else {
				resp, data = httpDo(t, tc.method, base+tc.path, tc.token, nil)
			}
			var e struct{ Error, Message string }
			if resp.StatusCode != tc.want || tc.want == http.StatusServiceUnavailable && (json.Unmarshal(data, &e) != nil ||
				e.Error != "Service Unavailable" || !strings.Contains(e.Message, "--no-av")) {
				t.Fatalf("%d %s", resp.StatusCode, data)
			}
		})
	}
}
