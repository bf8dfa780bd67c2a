package rest_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// TestReadAuthorization is the authorization matrix over the fixture: who
// may read public, +i, +k and +E channels through every channel route.
func TestReadAuthorization(t *testing.T) {
	f := newFixture(t, nil)
	for _, ch := range []string{"#pub", "#secret", "#keyed", "#enc"} {
		f.post(ch, "Alice", aliceDID, "hello quick", baseTime, nil)
	}
	routes := []string{
		"/api/v1/channels/%s/history", "/api/v1/history/%s", "/api/v1/search?q=quick&channel=%s",
		"/api/v1/channels/%s/topic", "/api/v1/channels/%s/pins", "/api/v1/pins/%s", "/api/v1/channels/%s/evidence",
	}
	const ok, forbidden = http.StatusOK, http.StatusForbidden
	tests := []struct {
		channel, token string
		want           int
	}{
		{"pub", "", ok},
		{"pub", "mallory-token", ok},
		{"secret", "", forbidden},
		{"secret", "mallory-token", forbidden}, // a bearer, not a member
		{"secret", "alice-token", ok},          // a member's DID
		{"secret", "founder-token", ok},        // the founder, not connected
		{"secret", "op-token", ok},             // a DID op, not connected
		{"keyed", "", forbidden},
		{"keyed", "mallory-token", forbidden},
		{"keyed", "alice-token", ok},
		{"keyed", "founder-token", forbidden}, // founder of another channel
		{"enc", "", forbidden},
		{"enc", "alice-token", ok},
	}
	for _, tt := range tests {
		for _, route := range routes {
			target := strings.Replace(route, "%s", tt.channel, 1)
			if code := f.status(target, tt.token); code != tt.want {
				t.Errorf("GET %s with %q = %d, want %d", target, tt.token, code, tt.want)
			}
		}
	}
	// A dead token is refused even where no token is needed, so that its
	// holder learns it died.
	resp, _ := f.get("/api/v1/channels/pub/history", "stale-token")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Errorf("stale token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

// TestBadInput throws malformed paths and parameters at every route: each
// gets the Error object with the right status, never a 500.
func TestBadInput(t *testing.T) {
	f := newFixture(t, nil)
	f.post("#pub", "Alice", aliceDID, "hello", baseTime, nil)
	long := strings.Repeat("x", 65)
	tests := []struct {
		target string
		want   int
	}{
		{"/api/v1/channels/pub/history?limit=abc", 400},
		{"/api/v1/channels/pub/history?limit=-1", 400},
		{"/api/v1/channels/pub/history?limit=0", 400},
		{"/api/v1/channels/pub/history?limit=1.5", 400},
		{"/api/v1/channels/pub/history?limit=1e9", 400},
		{"/api/v1/channels/pub/history?limit=%00", 400},
		{"/api/v1/channels/pub/history?before=-1", 400},
		{"/api/v1/channels/pub/history?before=abc", 400},
		{"/api/v1/channels/pub/history?before=1.5", 400},
		{"/api/v1/channels/pub/history?before=%27%20OR%201=1", 400},
		{"/api/v1/history/pub?before=not-a-msgid", 400},
		{"/api/v1/history/pub?limit=-3", 400},
		{"/api/v1/channels/" + long + "/history", 400},
		{"/api/v1/channels/%23" + long + "/topic", 400},
		{"/api/v1/channels/a%20b/history", 400},
		{"/api/v1/channels/a,b/history", 400},
		{"/api/v1/channels/a%2Cb/pins", 400},
		{"/api/v1/channels/a%00b/history", 400},
		{"/api/v1/channels/a%0D%0Ab/history", 400},
		{"/api/v1/channels/%23/history", 400},
		{"/api/v1/channels/%FF%FE/history", 400},
		{"/api/v1/pins/%01", 400},
		{"/api/v1/channels/dm:did:key:a/history", 403},
		{"/api/v1/history/dm:x", 403},
		{"/api/v1/channels/a%2Fb/history", 404}, // a legal name holding '/', unknown
		{"/api/v1/channels/..%2F..%2Fhealth/history", 404},
		{"/api/v1/channels/../history", 404},
		{"/api/v1/channels/nope/history", 404},
		{"/api/v1/channels/nope/export", 404},
		{"/api/v1/history/nope", 404},
		{"/api/v1/pins/nope", 404},
		{"/api/v1/channels//history", 400}, // an empty name
		{"/api/v1/channels/pub/history/extra", 404},
		{"/api/v1/channels/pub", 404},
		{"/api/v1/messages/%2F", 400},
		{"/api/v1/messages/" + strings.Repeat("A", 300), 400},
		{"/api/v1/users/%0A", 400},
		{"/api/v1/actors/%00", 400},
		{"/api/v1/actors/did:key:%00", 400},
		{"/api/v1/nothing", 404},
		{"/api/v2/channels", 404},
	}
	for _, tt := range tests {
		resp, body := f.get(tt.target, "")
		if resp.StatusCode != tt.want {
			t.Errorf("GET %s = %d, want %d: %s", tt.target, resp.StatusCode, tt.want, body)
		}
		checkErrorObject(t, resp, body)
	}
	// Wrong methods are 405 with the Error object.
	for _, target := range []string{"/api/v1/channels", "/api/v1/channels/pub/history", "/api/v1/search", "/api/v1/users/alice"} {
		rec := f.do("POST", target)
		if rec.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST %s = %d", target, rec.StatusCode)
		}
	}
}

// do sends a request without checking it against the contract.
func (f *fixture) do(method, target string) *http.Response {
	f.t.Helper()
	ts := &testServer{Server: f.srv}
	rec := ts.do(method, target, "")
	resp := rec.Result()
	var e rest.ErrorObject
	if resp.StatusCode >= 400 {
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Status != resp.StatusCode {
			f.t.Errorf("%s %s: %d %s is not the Error object", method, target, resp.StatusCode, rec.Body.String())
		}
	}
	return resp
}

// TestWithoutStore: history, search, export and message lookup are 503
// when the node keeps no messages; the state-only routes still answer.
func TestWithoutStore(t *testing.T) {
	f := newFixture(t, func(c *rest.Config) { c.Events = nil })
	f.state.update(func(fx *fsm.Fixture) {
		fx.Channel("#pub").Pins = []fsm.PinEntry{{MsgID: "01ARZ3NDEKTSV4RRFFQ69G5FAV", PinnedBy: "Alice", PinnedAt: baseTime.UnixMilli()}}
	})
	for target, want := range map[string]int{
		"/api/v1/channels/pub/history":                503,
		"/api/v1/history/pub":                         503,
		"/api/v1/channels/pub/export":                 503,
		"/api/v1/search?channel=pub&q=x":              503,
		"/api/v1/messages/01ARZ3NDEKTSV4RRFFQ69G5FAV": 503,
		"/api/v1/channels/pub/evidence":               503,
		"/api/v1/channels/pub/topic":                  200,
		"/api/v1/channels":                            200,
		"/api/v1/users/alice":                         200,
		"/api/v1/channels/pub/history?limit=bad":      400, // bad input first
		"/api/v1/messages/x":                          400,
	} {
		if code := f.status(target, ""); code != want {
			t.Errorf("GET %s = %d, want %d", target, code, want)
		}
	}
	var pins []rest.Pin
	f.getJSON("/api/v1/pins/pub", "", &pins)
	if len(pins) != 1 || pins[0].Text != "[message not found]" || pins[0].From != "unknown" {
		t.Errorf("pins without a store = %+v", pins)
	}
}

// TestWithoutState: a server without a replica knows no channels or users.
func TestWithoutState(t *testing.T) {
	f := newFixture(t, func(c *rest.Config) { c.State = nil })
	_, body := f.get("/api/v1/channels", "")
	if strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("channels = %s", body)
	}
	if code := f.status("/api/v1/channels/pub/history", ""); code != http.StatusNotFound {
		t.Errorf("history = %d", code)
	}
}

func TestEvidence(t *testing.T) {
	f := newFixture(t, nil)
	for i := range 1203 {
		f.post("#pub", "Alice", aliceDID, "m", baseTime.Add(time.Duration(i)*time.Second), nil)
	}
	count := func(target string) int {
		t.Helper()
		var bundle struct {
			Channel  string            `json:"channel"`
			Messages []json.RawMessage `json:"messages"`
		}
		f.getJSON(target, "", &bundle)
		if bundle.Channel != "#pub" {
			t.Fatalf("bundle for %q", bundle.Channel)
		}
		return len(bundle.Messages)
	}
	if n := count("/api/v1/channels/pub/evidence"); n != 1000 {
		t.Errorf("default page: %d messages", n)
	}
	if n := count("/api/v1/channels/pub/evidence?limit=99999"); n != 1203 {
		t.Errorf("capped page: %d messages", n)
	}
	if n := count("/api/v1/channels/pub/evidence?limit=3&before=" + strconv.FormatInt(baseTime.Unix()+2, 10)); n != 2 {
		t.Errorf("before: %d messages", n)
	}
	// Without a builder the route is not mounted, nor documented.
	f = newFixture(t, func(c *rest.Config) { c.Evidence = nil })
	resp, body := f.get("/api/v1/channels/pub/evidence", "")
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "No such endpoint") {
		t.Errorf("evidence without a builder: %d %s", resp.StatusCode, body)
	}
	_, doc := f.get("/api/v1/openapi.json", "")
	if strings.Contains(string(doc), "/evidence") {
		t.Error("the unmounted evidence route is documented")
	}
}
