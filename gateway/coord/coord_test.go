package coord_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/coord"
	"github.com/palaver-chat/palaver/node/signing"
	fsmcoord "github.com/palaver-chat/palaver/raft/fsm/coord"
)

type actionJSON struct {
	ActID    string  `json:"act_id"`
	Kind     string  `json:"kind"`
	Venue    string  `json:"venue"`
	State    string  `json:"state"`
	Offerer  string  `json:"offerer"`
	Offeree  *string `json:"offeree"`
	Assignee *string `json:"assignee"`
}

type actionDetail struct {
	ActID  string     `json:"act_id"`
	Venue  string     `json:"venue"`
	Task   actionJSON `json:"task"`
	Events []struct {
		EventID      string `json:"event_id"`
		Verb         string `json:"verb"`
		ActorDID     string `json:"actor_did"`
		State        string `json:"state"`
		Canonical    string `json:"canonical"`
		Signature    string `json:"signature"`
		ConfirmState string `json:"confirm_state"`
		Receipt      *struct {
			EventID   string `json:"event_id"`
			Canonical string `json:"canonical"`
			Signature string `json:"signature"`
		} `json:"receipt"`
	} `json:"events"`
}

// TestActLifecycle files a handoff in #pub over the checks of the IRC edge, reads it back over
// REST, and checks the server's signed confirm receipts.
func TestActLifecycle(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	offer := f.actTags(t, f.alice, "#pub", "handoff", "offer", "", "act-to", f.bob.did, "act-title", "Cite 3 sources")
	actID := offer["+freeq.at/eventid"]
	receipt, fl := f.svc.File(ctx, coord.Tagmsg{SenderDID: f.alice.did, Venue: "#pub", Tags: offer})
	if fl != nil {
		t.Fatalf("offer refused: %v", fl)
	}
	checkReceipt(t, f, receipt, actID, actID)
	accept := f.actTags(t, f.bob, "#pub", "handoff", "accept", actID)
	receipt, fl = f.svc.File(ctx, coord.Tagmsg{SenderDID: f.bob.did, Venue: "#pub", Tags: accept})
	if fl != nil {
		t.Fatalf("accept refused: %v", fl)
	}
	checkReceipt(t, f, receipt, actID, accept["+freeq.at/eventid"])

	var list struct{ Tasks []actionJSON }
	if code := f.get(t, "/api/v1/actions?kind=handoff&state=assigned&assignee="+url.QueryEscape(f.bob.did), "", &list); code != http.StatusOK {
		t.Fatalf("list: %d", code)
	}
	if len(list.Tasks) != 1 || list.Tasks[0].ActID != actID || *list.Tasks[0].Assignee != f.bob.did || list.Tasks[0].Venue != "#pub" {
		t.Fatalf("list %+v", list)
	}
	for _, q := range []string{"kind=bounty", "state=offered", "assignee=did:plc:nobody"} {
		if f.get(t, "/api/v1/actions?"+q, "", &list); len(list.Tasks) != 0 {
			t.Errorf("filter %s matched %+v", q, list.Tasks)
		}
	}
	var detail actionDetail
	if code := f.get(t, "/api/v1/actions/"+actID, "", &detail); code != http.StatusOK {
		t.Fatalf("detail: %d", code)
	}
	if len(detail.Events) != 2 || detail.Events[0].Verb != "offer" || detail.Events[1].State != "assigned" ||
		detail.Events[1].ConfirmState != "confirmed" || detail.Events[1].Receipt == nil || detail.Task.State != "assigned" {
		t.Fatalf("detail %+v", detail)
	}
	// The stored canonical and signature verify as they are, against the sender's key.
	pub := f.bob.priv.Public().(ed25519.PublicKey)
	if v, _ := signing.Verify([]byte(detail.Events[1].Canonical), detail.Events[1].Signature, func(string) (ed25519.PublicKey, bool) { return pub, true }); v != signing.Valid {
		t.Fatalf("stored accept does not verify: %v", v)
	}
	if code := f.get(t, "/api/v1/actions/01M16E7TC0NOSUCH0000000000", "", nil); code != http.StatusNotFound {
		t.Fatalf("unknown action: %d", code)
	}
	if code := f.get(t, "/api/v1/actions?limit=0", "", nil); code != http.StatusBadRequest {
		t.Fatalf("limit=0: %d", code)
	}
}

func checkReceipt(t *testing.T, f *fixture, r *coord.Receipt, actID, subject string) {
	t.Helper()
	if r == nil || r.Venue != "#pub" || r.Tags["+freeq.at/act-verb"] != "confirm" || r.Tags["+freeq.at/act-subject"] != subject ||
		r.Tags["+freeq.at/act-id"] != actID || r.Tags["+freeq.at/from"] != serverDID {
		t.Fatalf("receipt %+v", r)
	}
	v, _ := signing.ParseVenue(r.Venue)
	canonical, err := signing.Act{ID: r.Tags["+freeq.at/eventid"], Venue: v, Tags: r.Tags}.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	pub := f.serverKey.Public().(ed25519.PublicKey)
	if verdict, reason := signing.Verify(canonical, r.Tags["+freeq.at/sig"], func(kid string) (ed25519.PublicKey, bool) { return pub, kid == signing.KID(pub) }); verdict != signing.Valid {
		t.Fatalf("receipt signature: %v %v", verdict, reason)
	}
}

// TestActHostile: forged signatures, other senders, other channels' acts, steps out of order,
// mixed and missing tags are refused with their FAIL code, and nothing changes.
func TestActHostile(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	secretOffer := f.actTags(t, f.alice, "#secret", "handoff", "offer", "")
	if _, fl := f.svc.File(ctx, coord.Tagmsg{SenderDID: f.alice.did, Venue: "#secret", Tags: secretOffer}); fl != nil {
		t.Fatal(fl)
	}
	secretID := secretOffer["+freeq.at/eventid"]
	pubOffer := f.actTags(t, f.alice, "#pub", "handoff", "offer", "", "act-to", f.bob.did)
	if _, fl := f.svc.File(ctx, coord.Tagmsg{SenderDID: f.alice.did, Venue: "#pub", Tags: pubOffer}); fl != nil {
		t.Fatal(fl)
	}
	pubID := pubOffer["+freeq.at/eventid"]

	forged := f.actTags(t, f.bob, "#pub", "handoff", "accept", pubID)
	forged["+freeq.at/act-note"] = "changed after signing"
	stolen := f.actTags(t, f.bob, "#pub", "handoff", "accept", pubID)
	stolen["+freeq.at/from"] = f.alice.did
	wrongKey := f.actTags(t, f.carol, "#pub", "handoff", "accept", pubID)
	wrongKey["+freeq.at/from"] = f.bob.did
	unsigned := f.actTags(t, f.bob, "#pub", "handoff", "accept", pubID)
	delete(unsigned, "+freeq.at/sig")
	mixed := f.actTags(t, f.bob, "#pub", "handoff", "accept", pubID)
	mixed["+freeq.at/event"] = "task_update"
	noFrom := f.actTags(t, f.bob, "#pub", "handoff", "accept", pubID)
	delete(noFrom, "+freeq.at/from")
	noID := f.actTags(t, f.bob, "#pub", "handoff", "accept", pubID)
	delete(noID, "+freeq.at/eventid")
	tests := []struct {
		name   string
		sender string
		venue  string
		tags   map[string]string
		code   string
	}{
		{"forged signature", f.bob.did, "#pub", forged, "SIGNATURE_INVALID"},
		{"sender is not from", f.bob.did, "#pub", stolen, "ACTOR_MISMATCH"},
		{"signed by another key", f.bob.did, "#pub", wrongKey, "SIGNATURE_UNVERIFIABLE"},
		{"unsigned", f.bob.did, "#pub", unsigned, "SIGNATURE_REQUIRED"},
		{"mixed tags", f.bob.did, "#pub", mixed, "MIXED_TAGS"},
		{"no from", f.bob.did, "#pub", noFrom, "ACTOR_REQUIRED"},
		{"no event id", f.bob.did, "#pub", noID, "EVENTID_REQUIRED"},
		{"guest", "", "#pub", f.actTags(t, f.bob, "#pub", "handoff", "accept", pubID), "ACCOUNT_REQUIRED"},
		{"other channel's act", f.bob.did, "#pub", f.actTags(t, f.bob, "#pub", "handoff", "claim", secretID), "WRONG_VENUE"},
		{"out of order", f.bob.did, "#pub", f.actTags(t, f.bob, "#pub", "handoff", "complete", pubID), "ILLEGAL_STEP"},
		{"not the offeree", f.carol.did, "#pub", f.actTags(t, f.carol, "#pub", "handoff", "accept", pubID), "WRONG_SENDER"},
		{"unknown task", f.bob.did, "#pub", f.actTags(t, f.bob, "#pub", "handoff", "accept", "01M16E7TC0NOSUCH0000000000"), "UNKNOWN_TASK"},
		{"unknown kind", f.bob.did, "#pub", f.actTags(t, f.bob, "#pub", "approval", "request", ""), "UNKNOWN_KIND"},
		{"client confirm", f.bob.did, "#pub", f.actTags(t, f.bob, "#pub", "handoff", "confirm", pubID, "act-subject", pubID), "ILLEGAL_STEP"},
		{"malformed revival", f.alice.did, "#pub", f.actTags(t, f.alice, "#pub", "handoff", "offer", "", "act-replaces", "short"), "REPLACES_MALFORMED"},
		{"the same event again", f.alice.did, "#pub", pubOffer, "IMMUTABLE_EVENT"},
		{"bad venue", f.bob.did, "nochannel", f.actTags(t, f.bob, "#pub", "handoff", "accept", pubID), "INVALID_TARGET"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := f.coordState(t)
			if fl := f.svc.Check(coord.Tagmsg{SenderDID: tc.sender, Venue: tc.venue, Tags: tc.tags}); fl == nil || fl.Code != tc.code {
				t.Fatalf("check: %v, want FAIL TAGMSG %s", fl, tc.code)
			}
			r, fl := f.svc.File(ctx, coord.Tagmsg{SenderDID: tc.sender, Venue: tc.venue, Tags: tc.tags})
			if fl == nil || fl.Code != tc.code || fl.Command != "TAGMSG" || r != nil {
				t.Fatalf("got %v, %+v; want FAIL TAGMSG %s", fl, r, tc.code)
			}
			if after := f.coordState(t); after != before {
				t.Fatalf("a refused event changed the state")
			}
		})
	}
	// The secret channel's act is not listed nor readable without a member's bearer.
	var list struct{ Tasks []actionJSON }
	f.get(t, "/api/v1/actions", "", &list)
	if len(list.Tasks) != 1 || list.Tasks[0].ActID != pubID {
		t.Fatalf("anonymous list %+v", list.Tasks)
	}
	f.get(t, "/api/v1/actions", "alice", &list)
	if len(list.Tasks) != 2 {
		t.Fatalf("alice's list %+v", list.Tasks)
	}
	if code := f.get(t, "/api/v1/actions/"+secretID, "bob", nil); code != http.StatusForbidden {
		t.Fatalf("bob reads #secret's act: %d", code)
	}
	if code := f.get(t, "/api/v1/actions/"+secretID, "alice", nil); code != http.StatusOK {
		t.Fatalf("alice reads #secret's act: %d", code)
	}
	if code := f.get(t, "/api/v1/actions", "bogus-token", nil); code != http.StatusUnauthorized {
		t.Fatalf("dead token: %d", code)
	}
}

// TestTasksAndTimeline: typed events build a task; the timeline serves them with its filters
// under history's read rule.
func TestTasksAndTimeline(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	send := func(who string, venue string, tags map[string]string) {
		t.Helper()
		tags["+freeq.at/eventid"] = f.eventID()
		if _, fl := f.svc.File(ctx, coord.Tagmsg{SenderDID: who, Venue: venue, Tags: tags}); fl != nil {
			t.Fatalf("%v: %v", tags, fl)
		}
	}
	// Payloads as freeq's SDK sends them: JSON with ';' and ' ' percent-encoded.
	send(f.alice.did, "#pub", map[string]string{"+freeq.at/event": "task_request", "+freeq.at/task-id": "t-1", "+freeq.at/payload": `{"description":"summarize%20the%20logs"}`})
	send(f.bob.did, "#pub", map[string]string{"+freeq.at/event": "task_update", "+freeq.at/ref": "t-1", "+freeq.at/payload": "half way"})
	send(f.bob.did, "#pub", map[string]string{"+freeq.at/event": "evidence_attach", "+freeq.at/ref": "t-1", "+freeq.at/payload": `{"type":"url","summary":"a%3Bb"}`, "+freeq.at/evidence-type": "url"})
	// Another member completing bob's task is refused before it is relayed, and filing it is too.
	attack := coord.Tagmsg{SenderDID: f.carol.did, Venue: "#pub", Tags: map[string]string{"+freeq.at/event": "task_complete", "+freeq.at/ref": "t-1", "+freeq.at/eventid": f.eventID()}}
	if fl := f.svc.Check(attack); fl == nil || fl.Code != "WRONG_SENDER" {
		t.Fatalf("check of another DID's task_complete: %v", fl)
	}
	if _, fl := f.svc.File(ctx, attack); fl == nil || fl.Code != "WRONG_SENDER" {
		t.Fatalf("filing another DID's task_complete: %v", fl)
	}
	send(f.bob.did, "#pub", map[string]string{"+freeq.at/event": "task_complete", "+freeq.at/ref": "t-1"})
	send(f.alice.did, "#secret", map[string]string{"+freeq.at/event": "task_request", "+freeq.at/task-id": "t-secret"})

	var task struct {
		TaskID, Description, Status, Channel, ActorDID string `json:"-"`
		Events                                         []json.RawMessage
		Evidence                                       []json.RawMessage
	}
	var raw map[string]any
	if code := f.get(t, "/api/v1/tasks/t-1", "", &raw); code != http.StatusOK {
		t.Fatalf("task: %d", code)
	}
	b, _ := json.Marshal(raw)
	_ = json.Unmarshal(b, &task)
	if raw["status"] != "task_complete" || raw["description"] != "summarize the logs" || raw["channel"] != "#pub" || len(task.Events) != 4 ||
		len(task.Evidence) != 1 || raw["assignee"] != f.bob.did {
		t.Fatalf("task %s", b)
	}
	if ev := string(task.Evidence[0]); !strings.Contains(ev, `"payload":{"summary":"a;b","type":"url"}`) { // keys sorted: read through a map
		t.Fatalf("evidence %s", ev)
	}
	if ev := string(task.Events[0]); !strings.Contains(ev, `"payload":{"description":"summarize the logs"}`) {
		t.Fatalf("request event %s", ev)
	}
	if code := f.get(t, "/api/v1/tasks/t-none", "", nil); code != http.StatusNotFound {
		t.Fatalf("unknown task: %d", code)
	}
	if code := f.get(t, "/api/v1/tasks/t-secret", "bob", nil); code != http.StatusForbidden {
		t.Fatalf("task in #secret for bob: %d", code)
	}

	var tl struct {
		Channel string
		Events  []struct {
			EventID   string          `json:"event_id"`
			EventType string          `json:"event_type"`
			ActorDID  string          `json:"actor_did"`
			Channel   string          `json:"channel"`
			RefID     *string         `json:"ref_id"`
			Payload   json.RawMessage `json:"payload"`
			Signature *string         `json:"signature"`
			Timestamp int64           `json:"timestamp"`
		}
	}
	f.get(t, "/api/v1/channels/pub/events", "", &tl)
	if tl.Channel != "#pub" || len(tl.Events) != 4 || tl.Events[0].EventType != "task_complete" || tl.Events[0].Channel != "#pub" ||
		tl.Events[0].RefID == nil || *tl.Events[0].RefID != "t-1" || string(tl.Events[0].Payload) != "{}" || tl.Events[0].Timestamp == 0 {
		t.Fatalf("events %+v", tl)
	}
	if got := string(tl.Events[1].Payload); got != `{"type":"url","summary":"a;b"}` || tl.Events[1].EventType != "evidence_attach" ||
		!strings.Contains(string(task.Evidence[0]), `"event_id":"`+tl.Events[1].EventID+`"`) {
		t.Fatalf("evidence event %+v, task evidence %s", tl.Events[1], task.Evidence[0])
	}
	if got := string(tl.Events[2].Payload); got != `"half way"` {
		t.Fatalf("a payload that is not JSON: %s", got)
	}
	for q, want := range map[string]int{"type=task_update": 1, "ref_id=t-1": 4, "actor=" + url.QueryEscape(f.bob.did): 3, "limit=2": 2,
		"since=2026-08-01T11:00:00Z": 4, "since=1900000000": 0} {
		f.get(t, "/api/v1/channels/%23pub/events?"+q, "", &tl)
		if len(tl.Events) != want {
			t.Errorf("events?%s: %d items, want %d", q, len(tl.Events), want)
		}
	}
	var audit struct{ Entries []json.RawMessage }
	f.get(t, "/api/v1/channels/PUB/audit?actor="+url.QueryEscape(f.alice.did), "", &audit)
	if len(audit.Entries) != 1 {
		t.Fatalf("audit %d", len(audit.Entries))
	}
	for path, want := range map[string]int{
		"/api/v1/channels/secret/events": http.StatusForbidden, "/api/v1/channels/nochan/events": http.StatusNotFound,
		"/api/v1/channels/pub/events?since=yesterday": http.StatusBadRequest, "/api/v1/channels/pub/audit?limit=-1": http.StatusBadRequest,
		"/api/v1/channels/dm:a,b/events": http.StatusForbidden,
	} {
		if code := f.get(t, path, "bob", nil); code != want {
			t.Errorf("%s: %d, want %d", path, code, want)
		}
	}
	if code := f.get(t, "/api/v1/channels/secret/audit", "alice", nil); code != http.StatusOK {
		t.Fatalf("alice's audit of #secret: %d", code)
	}
}

func TestManifests(t *testing.T) {
	f := newFixture(t)
	toml := fmt.Sprintf(`[agent]
display_name = "Scholar"
description = "finds sources"

[provenance]
origin_type = "self-hosted"
creator_did = %q
revocation_authority = %q

[capabilities]
default = ["post", "freeq.at/web-search"]

[capabilities.channels]
"#pub" = ["post"]
`, f.alice.did, f.alice.did)
	var m struct {
		AgentDID string         `json:"agent_did"`
		Manifest map[string]any `json:"manifest"`
	}
	if code := f.do(t, http.MethodPost, "/api/v1/agents/manifests", "bob", toml, &m); code != http.StatusCreated {
		t.Fatalf("publish: %d", code)
	}
	if m.AgentDID != f.bob.did || m.Manifest["agent"].(map[string]any)["actor_class"] != "agent" {
		t.Fatalf("manifest %+v", m)
	}
	if code := f.get(t, "/api/v1/agents/manifests/"+f.bob.did, "", &m); code != http.StatusOK || m.Manifest["presence"].(map[string]any)["heartbeat_interval_seconds"] != float64(30) {
		t.Fatalf("get: %d %+v", code, m)
	}
	var list struct{ Manifests []json.RawMessage }
	if f.get(t, "/api/v1/agents/manifests", "", &list); len(list.Manifests) != 1 {
		t.Fatalf("list %d", len(list.Manifests))
	}
	if code := f.get(t, "/api/v1/agents/manifests/did:plc:nobody", "", nil); code != http.StatusNotFound {
		t.Fatalf("unknown manifest: %d", code)
	}
	before := f.coordState(t)
	for name, tc := range map[string]struct {
		body, bearer string
		want         int
	}{
		"oversized":        {`{"agent":{"display_name":"` + strings.Repeat("x", 17000) + `"}}`, "bob", http.StatusRequestEntityTooLarge},
		"not TOML":         {"[agent\nname=", "bob", http.StatusBadRequest},
		"no display name":  {`{"agent":{},"provenance":{"origin_type":"x","creator_did":"did:plc:a","revocation_authority":"did:plc:a"}}`, "bob", http.StatusBadRequest},
		"bad creator":      {`{"agent":{"display_name":"x"},"provenance":{"origin_type":"x","creator_did":"alice","revocation_authority":"did:plc:a"}}`, "bob", http.StatusBadRequest},
		"bad actor class":  {`{"agent":{"display_name":"x","actor_class":"god"},"provenance":{"origin_type":"x","creator_did":"did:plc:a","revocation_authority":"did:plc:a"}}`, "bob", http.StatusBadRequest},
		"capability space": {`{"agent":{"display_name":"x"},"provenance":{"origin_type":"x","creator_did":"did:plc:a","revocation_authority":"did:plc:a"},"capabilities":{"default":["a b"]}}`, "bob", http.StatusBadRequest},
		"trailing data":    {`{"agent":{"display_name":"x"},"provenance":{"origin_type":"x","creator_did":"did:plc:a","revocation_authority":"did:plc:a"}} {}`, "bob", http.StatusBadRequest},
		"no bearer":        {toml, "", http.StatusUnauthorized},
	} {
		if code := f.do(t, http.MethodPost, "/api/v1/agents/manifests", tc.bearer, tc.body, nil); code != tc.want {
			t.Errorf("%s: %d, want %d", name, code, tc.want)
		}
	}
	if f.coordState(t) != before {
		t.Fatal("a refused manifest changed the state")
	}
}

func TestCapabilitiesAndApprovals(t *testing.T) {
	f := newFixture(t)
	body := fmt.Sprintf(`{"agent_did":%q,"capability":"post","ttl_seconds":3600,"requires_approval":true}`, f.bob.did)
	if code := f.do(t, http.MethodPost, "/api/v1/channels/pub/agent-capabilities", "bob", body, nil); code != http.StatusForbidden {
		t.Fatalf("grant by a non-op: %d", code)
	}
	var g struct {
		ID        string `json:"id"`
		GrantedBy string `json:"granted_by"`
		ExpiresAt int64  `json:"expires_at"`
	}
	if code := f.do(t, http.MethodPost, "/api/v1/channels/pub/agent-capabilities", "alice", body, &g); code != http.StatusCreated {
		t.Fatalf("grant: %d", code)
	}
	if g.GrantedBy != f.alice.did || g.ExpiresAt != f.now.Unix()+3600 {
		t.Fatalf("grant %+v", g)
	}
	for name, tc := range map[string]struct{ body, bearer string }{
		"bad DID": {`{"agent_did":"bob","capability":"post"}`, "alice"}, "no capability": {fmt.Sprintf(`{"agent_did":%q}`, f.bob.did), "alice"},
		"not JSON": {`{`, "alice"}, "negative ttl": {fmt.Sprintf(`{"agent_did":%q,"capability":"post","ttl_seconds":-1}`, f.bob.did), "alice"},
	} {
		if code := f.do(t, http.MethodPost, "/api/v1/channels/pub/agent-capabilities", tc.bearer, tc.body, nil); code != http.StatusBadRequest {
			t.Errorf("%s: %d", name, code)
		}
	}
	var caps struct {
		Capabilities []json.RawMessage
	}
	if f.get(t, "/api/v1/channels/%23pub/agent-capabilities", "", &caps); len(caps.Capabilities) != 1 {
		t.Fatalf("capabilities %d", len(caps.Capabilities))
	}
	if code := f.get(t, "/api/v1/channels/nochan/agent-capabilities", "", nil); code != http.StatusNotFound {
		t.Fatalf("unknown channel: %d", code)
	}
	if code := f.get(t, "/api/v1/channels/secret/agent-capabilities", "bob", nil); code != http.StatusForbidden {
		t.Fatalf("restricted channel: %d", code)
	}

	var ap struct {
		ID, Status string
	}
	if code := f.do(t, http.MethodPost, "/api/v1/channels/pub/approvals", "carol", `{"capability":"deploy"}`, nil); code != http.StatusForbidden {
		t.Fatalf("approval by a non-member: %d", code)
	}
	if code := f.do(t, http.MethodPost, "/api/v1/channels/pub/approvals", "bob", `{"capability":"deploy","details":"v2"}`, &ap); code != http.StatusCreated || ap.Status != "pending" {
		t.Fatalf("approval: %d %+v", code, ap)
	}
	if code := f.do(t, http.MethodPost, "/api/v1/channels/pub/approvals/"+ap.ID, "bob", `{"approve":true}`, nil); code != http.StatusForbidden {
		t.Fatalf("self-approval: %d", code)
	}
	if code := f.do(t, http.MethodPost, "/api/v1/channels/pub/approvals/"+ap.ID, "alice", `{}`, nil); code != http.StatusBadRequest {
		t.Fatalf("no decision: %d", code)
	}
	if code := f.do(t, http.MethodPost, "/api/v1/channels/pub/approvals/"+ap.ID, "alice", `{"approve":true}`, &ap); code != http.StatusOK || ap.Status != "approved" {
		t.Fatalf("approve: %d %+v", code, ap)
	}
	if code := f.do(t, http.MethodPost, "/api/v1/channels/pub/approvals/"+ap.ID, "alice", `{"approve":false}`, nil); code != http.StatusConflict {
		t.Fatalf("resolving twice: %d", code)
	}
	var aps struct{ Approvals []json.RawMessage }
	if f.get(t, "/api/v1/channels/pub/approvals", "", &aps); len(aps.Approvals) != 1 {
		t.Fatalf("approvals %d", len(aps.Approvals))
	}
	if code := f.do(t, http.MethodDelete, "/api/v1/channels/pub/agent-capabilities/"+g.ID, "bob", "", nil); code != http.StatusForbidden {
		t.Fatalf("revoke by a non-op: %d", code)
	}
	if code := f.do(t, http.MethodDelete, "/api/v1/channels/pub/agent-capabilities/"+g.ID, "alice", "", nil); code != http.StatusOK {
		t.Fatalf("revoke: %d", code)
	}
	if code := f.do(t, http.MethodDelete, "/api/v1/channels/pub/agent-capabilities/"+g.ID, "alice", "", nil); code != http.StatusNotFound {
		t.Fatalf("revoke twice: %d", code)
	}
	var tl struct {
		Entries []struct{ Event, Category string }
	}
	f.get(t, "/api/v1/channels/pub/audit", "", &tl)
	if len(tl.Entries) != 4 || tl.Entries[0].Event != "capability_revoked" || tl.Entries[0].Category != "governance" {
		t.Fatalf("governance timeline %+v", tl.Entries)
	}
}

// delegation builds a FreeqBotDelegation/v1 certificate for bot, signed by creator.
func delegation(t *testing.T, bot, creator identity, createdAt string) map[string]any {
	t.Helper()
	cert := map[string]any{"type": coord.DelegationType, "bot_did": bot.did, "bot_public_key": strings.TrimPrefix(bot.did, "did:key:"),
		"creator_did": creator.did, "created_at": createdAt, "revocation_authority": creator.did}
	msg, err := json.Marshal(cert) // keys sorted, plain ASCII values: the JCS form
	if err != nil {
		t.Fatal(err)
	}
	cert["signature"] = base64.RawURLEncoding.EncodeToString(ed25519.Sign(creator.priv, msg))
	return cert
}

func encode(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// TestAgentCommands: what freeq's bot kit sends after 001, read back through /actors, and the
// hostile variants of each command.
func TestAgentCommands(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	bob := coord.Caller{Session: "s-bob", DID: f.bob.did, Nick: "bob"}
	if note, fl := f.svc.Provenance(ctx, bob, encode(t, delegation(t, f.bob, f.alice, "2026-07-01T00:00:00Z"))); fl != nil || !strings.Contains(note, "verified") {
		t.Fatalf("provenance: %q %v", note, fl)
	}
	if _, fl := f.svc.Agent(ctx, bob, []string{"REGISTER", "class=agent"}); fl != nil {
		t.Fatal(fl)
	}
	if _, fl := f.svc.Presence(ctx, bob, "state=active;status=reading"); fl != nil {
		t.Fatal(fl)
	}
	if _, fl := f.svc.Heartbeat(ctx, bob, "state=active;ttl=60"); fl != nil {
		t.Fatal(fl)
	}
	var actor map[string]any
	if code := f.get(t, "/api/v1/actors/"+f.bob.did, "", &actor); code != http.StatusOK {
		t.Fatalf("actor: %d", code)
	}
	prov, _ := actor["provenance"].(map[string]any)
	hb, _ := actor["heartbeat"].(map[string]any)
	pres, _ := actor["presence"].(map[string]any)
	if actor["actor_class"] != "agent" || prov["verified"] != true || prov["principal"] != f.alice.did ||
		hb["healthy"] != true || hb["ttl_seconds"] != float64(60) || pres["state"] != "active" || actor["online"] != true {
		t.Fatalf("actor %+v", actor)
	}
	if code := f.get(t, "/api/v1/actors/"+f.carol.did, "", &actor); code != http.StatusOK || actor["actor_class"] != "human" {
		t.Fatalf("carol: %d %+v", code, actor)
	}

	before := f.coordState(t)
	forgedCert := delegation(t, f.bob, f.alice, "2026-07-01T00:00:00Z")
	forgedCert["creator_did"] = f.carol.did
	tampered := delegation(t, f.bob, f.alice, "2026-07-01T00:00:00Z")
	tampered["created_at"] = "2026-07-02T00:00:00Z"
	for name, tc := range map[string]struct {
		run  func() (string, *coord.Fail)
		code string
	}{
		"someone else's certificate": {func() (string, *coord.Fail) {
			return f.svc.Provenance(ctx, bob, encode(t, delegation(t, f.carol, f.alice, "2026-07-01T00:00:00Z")))
		}, "DID_MISMATCH"},
		"not base64":    {func() (string, *coord.Fail) { return f.svc.Provenance(ctx, bob, "!!!") }, "INVALID_PROVENANCE"},
		"not an object": {func() (string, *coord.Fail) { return f.svc.Provenance(ctx, bob, encode(t, []int{1})) }, "INVALID_PROVENANCE"},
		"oversized": {func() (string, *coord.Fail) {
			return f.svc.Provenance(ctx, bob, encode(t, map[string]string{"x": strings.Repeat("y", 5000)}))
		}, "INVALID_PROVENANCE"},
		"guest":           {func() (string, *coord.Fail) { return f.svc.Presence(ctx, coord.Caller{Nick: "g"}, "state=active") }, "ACCOUNT_REQUIRED"},
		"unknown class":   {func() (string, *coord.Fail) { return f.svc.Agent(ctx, bob, []string{"REGISTER", "class=god"}) }, "INVALID_PARAMS"},
		"unknown sub":     {func() (string, *coord.Fail) { return f.svc.Agent(ctx, bob, []string{"FLY"}) }, "UNKNOWN_SUBCOMMAND"},
		"bad presence":    {func() (string, *coord.Fail) { return f.svc.Presence(ctx, bob, "state=flying") }, "INVALID_PARAMS"},
		"ttl too long":    {func() (string, *coord.Fail) { return f.svc.Heartbeat(ctx, bob, "ttl=999999") }, "INVALID_PARAMS"},
		"ttl not number":  {func() (string, *coord.Fail) { return f.svc.Heartbeat(ctx, bob, "ttl=soon") }, "INVALID_PARAMS"},
		"garbage kv":      {func() (string, *coord.Fail) { return f.svc.Heartbeat(ctx, bob, "novalue") }, "INVALID_PARAMS"},
		"spawn elsewhere": {func() (string, *coord.Fail) { return f.svc.Agent(ctx, bob, []string{"SPAWN", "kid", "#secret"}) }, "NOT_ON_CHANNEL"},
		"bad manifest": {func() (string, *coord.Fail) {
			return f.svc.Agent(ctx, bob, []string{"MANIFEST", encode(t, map[string]any{})})
		}, "INVALID_MANIFEST"},
	} {
		if note, fl := tc.run(); fl == nil || fl.Code != tc.code {
			t.Errorf("%s: %q %v, want %s", name, note, fl, tc.code)
		}
	}
	if f.coordState(t) != before {
		t.Fatal("a refused command changed the state")
	}
	// Forged and tampered certificates are kept, but unverified: they name no principal.
	for _, cert := range []map[string]any{forgedCert, tampered} {
		if note, fl := f.svc.Provenance(ctx, bob, encode(t, cert)); fl != nil || !strings.Contains(note, "unverified") {
			t.Fatalf("forged certificate: %q %v", note, fl)
		}
		f.get(t, "/api/v1/actors/"+f.bob.did, "", &actor)
		if p := actor["provenance"].(map[string]any); p["verified"] != false || p["principal"] != nil {
			t.Fatalf("forged certificate verified: %+v", p)
		}
	}
	if note, fl := f.svc.Agent(ctx, bob, []string{"SPAWN", "kid", "#pub", "capabilities=post,read;ttl=600;task=t-1"}); fl != nil {
		t.Fatalf("spawn: %q %v", note, fl)
	}
	var sp struct {
		SpawnedAgents []struct {
			ChildDID     string   `json:"child_did"`
			ParentDID    string   `json:"parent_did"`
			Capabilities []string `json:"capabilities"`
		} `json:"spawned_agents"`
	}
	f.get(t, "/api/v1/agents/spawned", "", &sp)
	if len(sp.SpawnedAgents) != 1 || sp.SpawnedAgents[0].ParentDID != f.bob.did || len(sp.SpawnedAgents[0].Capabilities) != 2 {
		t.Fatalf("spawned %+v", sp)
	}
	if code := f.get(t, "/api/v1/actors/"+sp.SpawnedAgents[0].ChildDID, "", &actor); code != http.StatusOK || actor["spawned"] != true || actor["parent_did"] != f.bob.did {
		t.Fatalf("spawned actor: %d %+v", code, actor)
	}
	testSpawnScope(t, f, bob, sp.SpawnedAgents[0].ChildDID)
}

// testSpawnScope: a spawned agent's DID is scoped to its parent, so another DID spawning the same
// nick gets its own DID and cannot take bob's; only bob despawns his agent; one DID's spawns are
// capped without touching another's.
func testSpawnScope(t *testing.T, f *fixture, bob coord.Caller, bobsKid string) {
	ctx := context.Background()
	alice := coord.Caller{Session: "s-alice", DID: f.alice.did, Nick: "alice"}
	if bobsKid != f.svc.ChildDID(f.bob.did, "kid") || !strings.HasPrefix(bobsKid, "did:web:") || !strings.HasSuffix(bobsKid, ":kid") {
		t.Fatalf("child DID %s", bobsKid)
	}
	if _, fl := f.svc.Agent(ctx, alice, []string{"SPAWN", "KID", "#pub"}); fl != nil {
		t.Fatalf("alice's spawn of the same nick: %v", fl)
	}
	if alices := f.svc.ChildDID(f.alice.did, "kid"); alices == bobsKid {
		t.Fatal("two parents share a child DID")
	}
	if _, fl := f.svc.Agent(ctx, alice, []string{"DESPAWN", "kid"}); fl != nil { // her own
		t.Fatalf("alice's despawn: %v", fl)
	}
	if _, fl := f.svc.Agent(ctx, alice, []string{"DESPAWN", "kid"}); fl == nil || fl.Code != "NOT_FOUND" {
		t.Fatalf("despawn twice: %v", fl)
	}
	if code := f.get(t, "/api/v1/actors/"+bobsKid, "", nil); code != http.StatusOK {
		t.Fatalf("bob's agent after alice's despawn: %d", code)
	}
	for i := 1; i < fsmcoord.MaxSpawnedPerDID; i++ {
		if _, fl := f.svc.Agent(ctx, bob, []string{"SPAWN", fmt.Sprintf("kid%d", i), "#pub"}); fl != nil {
			t.Fatalf("spawn %d: %v", i, fl)
		}
	}
	if _, fl := f.svc.Agent(ctx, bob, []string{"SPAWN", "onemore", "#pub"}); fl == nil || fl.Code != "LIMIT_REACHED" {
		t.Fatalf("spawn past the per-DID cap: %v", fl)
	}
	if _, fl := f.svc.Agent(ctx, alice, []string{"SPAWN", "onemore", "#pub"}); fl != nil {
		t.Fatalf("another DID's spawn at bob's cap: %v", fl)
	}
	if _, fl := f.svc.Agent(ctx, bob, []string{"DESPAWN", "kid"}); fl != nil {
		t.Fatalf("bob's despawn: %v", fl)
	}
	if _, fl := f.svc.Agent(ctx, bob, []string{"SPAWN", "onemore", "#pub"}); fl != nil {
		t.Fatalf("spawn into the freed slot: %v", fl)
	}
}

// TestSweepExpiresStandingOffers: offers whose deadline passed (beyond the tolerance) are
// expired by the server; others are left as they are.
func TestSweepExpiresStandingOffers(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	past := strconv.FormatInt(f.now.Add(-3*time.Minute).Unix(), 10)
	edge := strconv.FormatInt(f.now.Add(-time.Minute).Unix(), 10) // within the 120 s tolerance
	future := strconv.FormatInt(f.now.Add(time.Hour).Unix(), 10)
	file := func(tags map[string]string, who identity) string {
		t.Helper()
		if _, fl := f.svc.File(ctx, coord.Tagmsg{SenderDID: who.did, Venue: "#pub", Tags: tags}); fl != nil {
			t.Fatal(fl)
		}
		return tags["+freeq.at/eventid"]
	}
	open := file(f.actTags(t, f.alice, "#pub", "handoff", "offer", "", "act-deadline", past), f.alice)
	directed := file(f.actTags(t, f.alice, "#pub", "bounty", "offer", "", "act-deadline", past), f.alice)
	atEdge := file(f.actTags(t, f.alice, "#pub", "handoff", "offer", "", "act-deadline", edge), f.alice)
	later := file(f.actTags(t, f.alice, "#pub", "handoff", "offer", "", "act-deadline", future), f.alice)
	cancelled := file(f.actTags(t, f.alice, "#pub", "handoff", "offer", "", "act-deadline", past), f.alice)
	file(f.actTags(t, f.alice, "#pub", "handoff", "cancel", cancelled), f.alice)
	if n := f.svc.Sweep(ctx); n != 2 {
		t.Fatalf("expired %d, want 2", n)
	}
	for id, want := range map[string]string{open: "expired", directed: "expired", atEdge: "open", later: "open", cancelled: "cancelled"} {
		var d actionDetail
		f.get(t, "/api/v1/actions/"+id, "", &d)
		if d.Task.State != want {
			t.Errorf("%s: %s, want %s", id, d.Task.State, want)
		}
	}
	if n := f.svc.Sweep(ctx); n != 0 {
		t.Fatalf("a second sweep expired %d", n)
	}
}

// TestTypedEventWithoutEventID: a typed event may leave its id to the server (the edge mints the
// msgid after the check); an act event may not.
func TestTypedEventWithoutEventID(t *testing.T) {
	f := newFixture(t)
	typed := map[string]string{"+freeq.at/event": "task_request", "+freeq.at/task-id": "t-9"}
	if fl := f.svc.Check(coord.Tagmsg{SenderDID: f.alice.did, Venue: "#pub", Tags: typed}); fl != nil {
		t.Fatalf("check: %v", fl)
	}
	if _, fl := f.svc.File(context.Background(), coord.Tagmsg{SenderDID: f.alice.did, Venue: "#pub", Tags: typed}); fl == nil || fl.Code != "EVENTID_REQUIRED" {
		t.Fatalf("filing without an id: %v", fl)
	}
	if _, fl := f.svc.File(context.Background(), coord.Tagmsg{SenderDID: f.alice.did, Venue: "#pub", Tags: typed, EventID: f.eventID()}); fl != nil {
		t.Fatalf("filing with the edge's msgid: %v", fl)
	}
	if code := f.get(t, "/api/v1/tasks/t-9", "", nil); code != http.StatusOK {
		t.Fatalf("task: %d", code)
	}
}
