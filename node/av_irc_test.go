package node

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/av"
	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// expectFail waits for FAIL <command> <code> <channel> :text.
func expectFail(t *testing.T, c *ircclient.Client, command, code, channel string) ircmsg.Message {
	t.Helper()
	msgs := readUntil(t, c, "FAIL "+command+" "+code, func(m ircmsg.Message) bool {
		return m.Command == "FAIL" && m.Param(0) == command && m.Param(1) == code && m.Param(2) == channel && m.Param(3) != ""
	})
	return msgs[len(msgs)-1]
}

// expectAVStarted waits for the TAGMSG of a call that actor started.
func expectAVStarted(t *testing.T, c *ircclient.Client, actor string) ircmsg.Message {
	t.Helper()
	msgs := readUntil(t, c, "av-state started by "+actor, func(m ircmsg.Message) bool {
		return m.Command == "TAGMSG" && m.Tags[av.TagState] == "started" && m.Tags[av.TagActor] == actor
	})
	return msgs[len(msgs)-1]
}

// avTagged lists the messages that carry a +freeq.at/av-* tag.
func avTagged(msgs []ircmsg.Message) []ircmsg.Message {
	var out []ircmsg.Message
	for _, m := range msgs {
		for k := range m.Tags {
			if strings.HasPrefix(k, "+freeq.at/av-") {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

// waitClosed waits for the signalling socket of c to close with the code and a reason holding
// reason.
func waitClosed(t *testing.T, c interface {
	Closed() <-chan struct{}
	CloseReason() string
}, who, reason string) {
	t.Helper()
	select {
	case <-c.Closed():
	case <-time.After(30 * time.Second):
		t.Fatalf("%s's signalling is still open", who)
	}
	if !strings.Contains(c.CloseReason(), reason) {
		t.Fatalf("%s's signalling closed with %q, want %q", who, c.CloseReason(), reason)
	}
}

// TestAVCallsFromIRC: members start, join, leave and end a call with +freeq.at/av-* TAGMSGs; the
// refusals are FAILs that change nothing; an operator's av-end closes every participant's
// signalling and ends the roster.
func TestAVCallsFromIRC(t *testing.T) {
	n := startNode(t, t.TempDir(), avLoopback)
	base := "http://" + n.HTTPAddr()
	api := avAPI(t)
	alice, ares := login(t, n, "alice", "message-tags", "echo-message")
	bob, bres := login(t, n, "bob", "message-tags")
	carol, cres := login(t, n, "carol", "message-tags")
	dave, _ := login(t, n, "dave", "message-tags")
	eve, _ := login(t, n, "eve", "message-tags")
	gus, _ := guest(t, n, "gus", "message-tags")
	joinChannels(t, alice, "#call") // the founder: a channel operator
	for _, c := range []*ircclient.Client{bob, carol, eve, gus} {
		joinChannels(t, c, "#call")
	}
	// Outsiders may send to #call (-n), and eve is voiced (she may speak) but banned.
	sendLines(t, alice, "MODE #call -n", "MODE #call +v eve", "MODE #call +b eve!*@*")
	expectFrom(t, alice, "alice", "MODE", "#call", "+b")

	// Bob starts a call from IRC; everyone sees who, which call and where to connect.
	sendLines(t, bob, "@+freeq.at/av-start TAGMSG #call")
	started := expectAVStarted(t, carol, "bob")
	id := started.Tags[av.TagID]
	tokenURL := base + "/api/v1/av/sessions/" + id + "/token"
	if id == "" || started.Tags[av.TagHost] != n.cfg.NodeName || started.Tags[av.TagTokenURL] != tokenURL ||
		started.Tags[av.TagParticipants] != "0" || started.Source != n.cfg.ServerName {
		t.Fatalf("started %v", started)
	}
	if s := getSession(t, base, id); s.State != "Active" || s.CreatedByNick != "bob" || s.HostNode != n.cfg.NodeName {
		t.Fatalf("session %+v", s)
	}
	resp, body := httpDo(t, http.MethodGet, started.Tags[av.TagTokenURL], bres.Token, nil)
	var tok av.TokenResponse
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &tok) != nil || tok.SessionID != id {
		t.Fatalf("token: %d %s", resp.StatusCode, body)
	}
	bc := dialCall(t, api, tok.SignalingURL, "bob", true)
	expectAVState(t, carol, "joined", id, "bob")
	drain(t, alice)

	for _, tc := range []struct {
		name          string
		c             *ircclient.Client
		line          string
		command, code string
	}{
		{"outsider joins", dave, "@+freeq.at/av-join TAGMSG #call", "TAGMSG", av.FailNotOnChannel},
		{"guest joins", gus, "@+freeq.at/av-join TAGMSG #call", "TAGMSG", av.FailAccountRequired},
		{"banned member joins", eve, "@+freeq.at/av-join TAGMSG #call", "TAGMSG", av.FailBanned},
		{"second call", carol, "@+freeq.at/av-start TAGMSG #call", "TAGMSG", av.FailActive},
		{"member ends", carol, "@+freeq.at/av-end TAGMSG #call", "TAGMSG", av.FailNotOperator},
		{"the starter ends", bob, "@+freeq.at/av-end TAGMSG #call", "TAGMSG", av.FailNotOperator},
		{"guest ends", gus, "@+freeq.at/av-end TAGMSG #call", "TAGMSG", av.FailNotOperator},
		{"leave without being in", carol, "@+freeq.at/av-leave TAGMSG #call", "TAGMSG", av.FailNotInCall},
		{"join twice", bob, "@+freeq.at/av-join TAGMSG #call", "TAGMSG", av.FailAlreadyIn},
		{"another call's id", carol, "@+freeq.at/av-join;+freeq.at/av-id=01ARZ3NDEKTSV4RRFFQ69G5FAV TAGMSG #call", "TAGMSG", av.FailNoCall},
		{"two actions", carol, "@+freeq.at/av-join;+freeq.at/av-leave TAGMSG #call", "TAGMSG", av.FailInvalidTag},
		{"forged state", carol, "@+freeq.at/av-state=ended;+freeq.at/av-id=" + id + " TAGMSG #call", "TAGMSG", av.FailInvalidTag},
		{"forged host", carol, "@+freeq.at/av-host=elsewhere TAGMSG #call", "TAGMSG", av.FailInvalidTag},
		{"reason too long", carol, "@+freeq.at/av-join;+freeq.at/av-reason=" + strings.Repeat("x", 201) + " TAGMSG #call", "TAGMSG", av.FailInvalidTag},
		{"action on a PRIVMSG", carol, "@+freeq.at/av-join PRIVMSG #call :join me", "PRIVMSG", av.FailInvalidTag},
		{"action on a status message", carol, "@+freeq.at/av-join TAGMSG @#call", "TAGMSG", av.FailInvalidTag},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sendLines(t, tc.c, tc.line)
			channel := "#call"
			if strings.HasSuffix(tc.line, "@#call") {
				channel = "@#call"
			}
			expectFail(t, tc.c, tc.command, tc.code, channel)
		})
	}
	// Nothing changed: the roster is bob alone, and no member saw any of it.
	if s := getSession(t, base, id); s.State != "Active" || s.ParticipantCount != 1 || len(s.Participants) != 1 {
		t.Fatalf("after the refusals: %+v", s)
	}
	if seen := avTagged(drain(t, alice)); len(seen) != 0 {
		t.Fatalf("members saw refused actions: %v", seen)
	}

	// Carol joins from IRC (the roster has her before any media), then leaves with a reason.
	sendLines(t, carol, "@+freeq.at/av-join;+freeq.at/av-id="+id+" TAGMSG #call")
	joined := expectAVState(t, alice, "joined", id, "carol")
	if joined.Tags[av.TagParticipants] != "2" || joined.Tags[av.TagTokenURL] != tokenURL {
		t.Fatalf("joined %v", joined)
	}
	if p, ok := participant(getSession(t, base, id), "carol"); !ok || p.LeftAt != nil {
		t.Fatalf("carol in the roster: %+v %v", p, ok)
	}
	sendLines(t, carol, "@+freeq.at/av-leave;+freeq.at/av-reason=brb TAGMSG #call")
	if left := expectAVState(t, alice, "left", id, "carol"); left.Tags[av.TagReason] != "brb" {
		t.Fatalf("left %v", left)
	}
	if p, ok := participant(getSession(t, base, id), "carol"); !ok || p.LeftAt == nil || p.Reason != "brb" {
		t.Fatalf("carol in the roster: %+v %v", p, ok)
	}
	callToken(t, base, cres.Token, id, http.StatusOK) // she may come back

	// The channel operator ends it: bob's signalling closes, the roster ends, members see it.
	callsEnding.Store(bc, struct{}{})
	sendLines(t, alice, "@+freeq.at/av-end;+freeq.at/av-reason=meeting\\sover TAGMSG #call")
	readUntil(t, alice, "the echo of the end", func(m ircmsg.Message) bool {
		_, end := m.Tags[av.TagEnd]
		return m.Command == "TAGMSG" && isFrom(m, "alice") && end
	})
	if ended := expectAVState(t, carol, "ended", id, "alice"); ended.Tags[av.TagReason] != "meeting over" {
		t.Fatalf("ended %v", ended)
	}
	waitClosed(t, bc, "bob", "meeting over")
	if bc.CloseStatus() != av.CloseRemoved {
		t.Errorf("bob's signalling closed with %d", bc.CloseStatus())
	}
	s := getSession(t, base, id)
	if s.State != "Ended" || s.EndedAt == nil || s.EndedBy == nil || *s.EndedBy != ares.DID || s.EndReason == nil ||
		*s.EndReason != "meeting over" || s.ParticipantCount != 0 {
		t.Fatalf("ended session %+v", s)
	}
	eventually(t, "the forwarding unit forgets the call", func() bool { _, ok := n.SFU().Inspect("#call"); return !ok })
	sendLines(t, alice, "@+freeq.at/av-end TAGMSG #call")
	expectFail(t, alice, "TAGMSG", av.FailNoCall, "#call")
	sendLines(t, carol, "@+freeq.at/av-start TAGMSG #call")
	expectAVStarted(t, alice, "carol")
}

// TestAVEndOverREST: POST /api/v1/sessions/{id}/end, operators only.
func TestAVEndOverREST(t *testing.T) {
	operKey := newEd25519(t)
	n := startNode(t, t.TempDir(), func(c *Config) { avLoopback(c); c.OperDIDs = []string{operKey.DID()} })
	base := "http://" + n.HTTPAddr()
	api := avAPI(t)
	alice, ares := login(t, n, "alice", "message-tags")
	bob, bres := login(t, n, "bob", "message-tags")
	_, ores := loginAs(t, n, operKey, "root", "message-tags")
	joinChannels(t, alice, "#call", "#two")
	joinChannels(t, bob, "#call", "#two")
	call := startCall(t, base, bres.Token, "#call")
	bc := dialCall(t, api, callToken(t, base, bres.Token, call.ID, http.StatusOK).SignalingURL, "bob", true)
	expectAVState(t, alice, "joined", call.ID, "bob")

	end := func(token, id, body string) (*http.Response, []byte) {
		t.Helper()
		var r *strings.Reader
		if body != "" {
			r = strings.NewReader(body)
			return httpDo(t, http.MethodPost, base+"/api/v1/sessions/"+id+"/end", token, r)
		}
		return httpDo(t, http.MethodPost, base+"/api/v1/sessions/"+id+"/end", token, nil)
	}
	for _, tc := range []struct {
		name, token, id, body string
		want                  int
	}{
		{"no bearer", "", call.ID, "", http.StatusUnauthorized},
		{"not an operator", bres.Token, call.ID, "", http.StatusForbidden},
		{"unknown call", ares.Token, "01ARZ3NDEKTSV4RRFFQ69G5FAV", "", http.StatusNotFound},
		{"bad body", ares.Token, call.ID, `{"reason":`, http.StatusBadRequest},
		{"reason too long", ares.Token, call.ID, `{"reason":"` + strings.Repeat("x", 201) + `"}`, http.StatusBadRequest},
		{"reason with a control character", ares.Token, call.ID, `{"reason":"a\u0007b"}`, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := end(tc.token, tc.id, tc.body)
			var e struct{ Error, Message string }
			if resp.StatusCode != tc.want || json.Unmarshal(body, &e) != nil || e.Error == "" || e.Message == "" {
				t.Fatalf("%d %s, want %d with an Error object", resp.StatusCode, body, tc.want)
			}
		})
	}
	if s := getSession(t, base, call.ID); s.State != "Active" || s.ParticipantCount != 1 {
		t.Fatalf("after the refusals: %+v", s)
	}

	// The channel operator ends it.
	callsEnding.Store(bc, struct{}{})
	resp, body := end(ares.Token, call.ID, `{"reason":"time is up"}`)
	var s av.Session
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &s) != nil || s.State != "Ended" || s.EndedBy == nil ||
		*s.EndedBy != ares.DID || s.EndReason == nil || *s.EndReason != "time is up" {
		t.Fatalf("end: %d %s", resp.StatusCode, body)
	}
	waitClosed(t, bc, "bob", "time is up")
	if ended := expectAVState(t, bob, "ended", call.ID, "alice"); ended.Tags[av.TagReason] != "time is up" {
		t.Fatalf("ended %v", ended)
	}
	if resp, body := end(ares.Token, call.ID, ""); resp.StatusCode != http.StatusConflict {
		t.Fatalf("ending twice: %d %s", resp.StatusCode, body)
	}

	// A server operator (--oper-did) ends a call in a channel it is not in.
	other := startCall(t, base, bres.Token, "#two")
	resp, body = end(ores.Token, other.ID, "")
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &s) != nil || s.State != "Ended" || *s.EndReason != "ended by an operator" {
		t.Fatalf("server operator: %d %s", resp.StatusCode, body)
	}
	expectAVState(t, alice, "ended", other.ID, "root")
}
