package node

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/av"
	"github.com/palaver-chat/palaver/gateway/rest/contracttest"
)

func TestAVArtifacts(t *testing.T) {
	n := startNode(t, t.TempDir(), func(c *Config) { avLoopback(c); c.NoFloodLimits = true })
	base := "http://" + n.HTTPAddr()
	contract := contracttest.Fetch(t, base)
	alice, ares := login(t, n, "alice")
	bob, bres := login(t, n, "bob")
	_, dres := login(t, n, "dave")
	joinChannels(t, alice, "#call", "#hidden")
	joinChannels(t, bob, "#call")
	sendLines(t, alice, "MODE #hidden +s")
	call := startCall(t, base, ares.Token, "#call")
	hidden := startCall(t, base, ares.Token, "#hidden")
	artifactsURL := func(id string) string { return base + "/api/v1/sessions/" + id + "/artifacts" }

	do := func(t *testing.T, method, u, token, body string, want int) []byte {
		t.Helper()
		var resp *http.Response
		var data []byte
		if body != "" {
			resp, data = httpDo(t, method, u, token, strings.NewReader(body))
		} else {
			resp, data = httpDo(t, method, u, token, nil)
		}
		contract.Check(t, method, u, resp, data)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", method, u, resp.StatusCode, data, want)
		}
		if want >= 400 {
			var e struct {
				Error   string `json:"error"`
				Message string `json:"message"`
				Status  int    `json:"status"`
			}
			if json.Unmarshal(data, &e) != nil || e.Error == "" || e.Message == "" || e.Status != want {
				t.Fatalf("not an Error object: %s", data)
			}
		}
		return data
	}

	// A member adds artifacts; everyone who may read the call sees them, in order.
	var first av.Artifact
	data := do(t, http.MethodPost, artifactsURL(call.ID), bres.Token,
		`{"kind":"recording","url":"https://example.com/rec.webm","title":"Weekly call","extra":true}`, http.StatusCreated)
	if err := json.Unmarshal(data, &first); err != nil || first.ID == "" || first.Kind != "recording" ||
		first.URL != "https://example.com/rec.webm" || first.Title != "Weekly call" || first.AddedByNick != "bob" ||
		first.AddedBy == "" || first.CreatedAt == 0 {
		t.Fatalf("artifact %s", data)
	}
	do(t, http.MethodPost, artifactsURL(call.ID), ares.Token, `{"kind":"notes","url":"http://notes.example/1"}`, http.StatusCreated)
	var list av.Artifacts
	if err := json.Unmarshal(do(t, http.MethodGet, artifactsURL(call.ID), "", "", http.StatusOK), &list); err != nil ||
		list.SessionID != call.ID || len(list.Artifacts) != 2 || list.Artifacts[0] != first || list.Artifacts[1].Kind != "notes" {
		t.Fatalf("artifacts %+v %v", list, err)
	}
	if s := getSession(t, base, call.ID); len(s.Artifacts) != 2 || s.Artifacts[0] != first {
		t.Fatalf("session %+v", s)
	}
	do(t, http.MethodGet, base+"/api/v1/sessions/"+call.ID, "", "", http.StatusOK)

	for _, tc := range []struct {
		name, method, url, token, body string
		want                           int
	}{
		{"read a hidden call as a member", http.MethodGet, artifactsURL(hidden.ID), ares.Token, "", http.StatusOK},
		{"read a hidden call anonymously", http.MethodGet, artifactsURL(hidden.ID), "", "", http.StatusForbidden},
		{"read a hidden call as a non-member", http.MethodGet, artifactsURL(hidden.ID), dres.Token, "", http.StatusForbidden},
		{"read an unknown call", http.MethodGet, artifactsURL("01NOSUCHCALL"), "", "", http.StatusNotFound},
		{"add without bearer", http.MethodPost, artifactsURL(call.ID), "", `{"kind":"link","url":"https://example.com"}`, http.StatusUnauthorized},
		{"add as a non-member", http.MethodPost, artifactsURL(call.ID), dres.Token, `{"kind":"link","url":"https://example.com"}`, http.StatusForbidden},
		{"add to an unknown call", http.MethodPost, artifactsURL("01NOSUCHCALL"), ares.Token, `{"kind":"link","url":"https://example.com"}`, http.StatusNotFound},
		{"malformed body", http.MethodPost, artifactsURL(call.ID), ares.Token, `{"kind":`, http.StatusBadRequest},
		{"wrong field type", http.MethodPost, artifactsURL(call.ID), ares.Token, `{"kind":"link","url":7}`, http.StatusBadRequest},
		{"unknown kind", http.MethodPost, artifactsURL(call.ID), ares.Token, `{"kind":"video","url":"https://example.com"}`, http.StatusBadRequest},
		{"no kind", http.MethodPost, artifactsURL(call.ID), ares.Token, `{"url":"https://example.com"}`, http.StatusBadRequest},
		{"not http", http.MethodPost, artifactsURL(call.ID), ares.Token, `{"kind":"link","url":"javascript:alert(1)"}`, http.StatusBadRequest},
		{"no url", http.MethodPost, artifactsURL(call.ID), ares.Token, `{"kind":"link"}`, http.StatusBadRequest},
		{"url too long", http.MethodPost, artifactsURL(call.ID), ares.Token,
			`{"kind":"link","url":"https://example.com/` + strings.Repeat("x", 2048) + `"}`, http.StatusBadRequest},
		{"title too long", http.MethodPost, artifactsURL(call.ID), ares.Token,
			`{"kind":"link","url":"https://example.com","title":"` + strings.Repeat("t", 201) + `"}`, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) { do(t, tc.method, tc.url, tc.token, tc.body, tc.want) })
	}

	// A call keeps at most 50 artifacts; the 51st is refused with 409.
	do(t, http.MethodPost, artifactsURL(call.ID), bres.Token, `{"kind":"summary","url":"https://example.com/s"}`, http.StatusCreated)
	for i := 3; i < 50; i++ {
		do(t, http.MethodPost, artifactsURL(call.ID), ares.Token, `{"kind":"link","url":"https://example.com/`+strconv.Itoa(i)+`"}`, http.StatusCreated)
	}
	data = do(t, http.MethodPost, artifactsURL(call.ID), ares.Token, `{"kind":"link","url":"https://example.com/more"}`, http.StatusConflict)
	if !strings.Contains(string(data), "50 artifacts") {
		t.Fatalf("cap: %s", data)
	}
	if err := json.Unmarshal(do(t, http.MethodGet, artifactsURL(call.ID), "", "", http.StatusOK), &list); err != nil || len(list.Artifacts) != 50 {
		t.Fatalf("%d artifacts, %v", len(list.Artifacts), err)
	}
}
