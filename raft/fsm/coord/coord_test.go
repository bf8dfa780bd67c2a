package coord

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/coord/act"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

// samples holds one command of every type of the module with every field set.
var samples = []fsm.Command{
	FileAct{Venue: "#c", EventID: "01M16E7TC0OFFER00000000000", From: "did:plc:alice",
		Fields:    map[string]string{"act": "handoff", "act-verb": "offer", "act-to": "did:plc:bob"},
		Canonical: `{"act":"handoff"}`, Signature: "ed25519:k:s",
		Receipt: &ActReceipt{EventID: "01M16E7TC0RCPT000000000000", From: "did:web:x", Canonical: "{}", Signature: "ed25519:k:r"}},
	FileCoordEvent{Venue: "#c", EventID: "e1", Type: "task_request", ActorDID: "did:plc:alice", Payload: `{"description":"d"}`,
		Ref: "t1", Evidence: "log", Signature: "ed25519:k:s"},
	RegisterManifest{DID: "did:plc:alice", Manifest: `{"agent":{}}`, Class: "agent"},
	SetActorClass{DID: "did:plc:alice", Class: "agent", Session: "s1"},
	SetProvenance{DID: "did:plc:alice", Verified: true, Principal: "did:plc:bob", Reason: "ok", Certificate: "{}", Expires: 1_900_000_000},
	SetPresence{DID: "did:plc:alice", State: "active", Status: "working"},
	Heartbeat{DID: "did:plc:alice", State: "active", TTL: 60},
	RecordSpawn{Agent: SpawnedAgent{ChildDID: "did:key:z6Mk", ParentDID: "did:plc:alice", ParentNick: "alice", Nick: "kid",
		Channel: "#c", Capabilities: []string{"post"}, TTL: 60, TaskRef: "t1", SpawnedAt: 5}},
	GrantCapability{Channel: "#c", ByDID: "did:plc:alice", Grant: CapabilityGrant{ID: "g1", AgentDID: "did:plc:bob",
		Capability: "post", Scope: "#c", TTLSeconds: 60, RequiresApproval: true, RateLimit: "5/m", GrantedBy: "x", GrantedAt: 1, ExpiresAt: 2}},
	RevokeCapability{Channel: "#c", ByDID: "did:plc:alice", ID: "g1"},
	RequestApproval{Channel: "#c", Approval: Approval{ID: "a1", AgentDID: "did:plc:bob", Capability: "deploy", Details: "v2",
		Status: "x", RequestedAt: 1, ResolvedBy: "y", ResolvedAt: 2}},
	ResolveApproval{Channel: "#c", ByDID: "did:plc:alice", ID: "a1", Approve: true},
	SystemActEvent{ActID: "01M16E7TC0OFFER00000000000", Verb: "expire", EventID: "01M16E7TC0EXP0000000000000", From: "did:web:x"},
	Despawn{ParentDID: "did:plc:alice", ChildDID: "did:web:x:agents:a1:kid"},
}

// randomCommand draws one coordination command from a small universe, so that commands collide.
func randomCommand(c *fsmtest.Chooser) fsm.Command {
	actIDs := []string{"01M16E7TC0ACTA000000000000", "01M16E7TC0ACTB000000000000", "01M16E7TC0ACTC000000000000"}
	did := func() string { return fsmtest.Pick(c, []string{"did:plc:d1", "did:plc:d2", "did:plc:d3", "bad"}) }
	ch := func() string { return fsmtest.Pick(c, fsmtest.GenChannels) }
	switch c.Intn(17) {
	case 13, 14:
		return RequestApproval{Channel: ch(), Approval: Approval{ID: fsmtest.Pick(c, []string{"a1", "a2", "a3"}), AgentDID: fsmtest.Pick(c, fsmtest.GenDIDs), Capability: "deploy"}}
	case 15, 16:
		return ResolveApproval{Channel: ch(), ByDID: fsmtest.Pick(c, fsmtest.GenDIDs), ID: fsmtest.Pick(c, []string{"a1", "a2", "a3"}), Approve: c.Intn(2) == 0}
	case 0:
		f := map[string]string{"act": fsmtest.Pick(c, []string{"handoff", "bounty", "nope"}), "act-verb": "offer"}
		if c.Intn(2) == 0 {
			f["act-to"] = did()
		}
		return FileAct{Venue: ch(), EventID: fsmtest.Pick(c, actIDs), From: did(), Fields: f}
	case 1:
		f := map[string]string{"act": "handoff", "act-id": fsmtest.Pick(c, actIDs),
			"act-verb": fsmtest.Pick(c, []string{"accept", "claim", "progress", "complete", "cancel", "decline", "confirm"})}
		return FileAct{Venue: ch(), EventID: fsmtest.Pick(c, []string{"01M16E7TC0E1", "01M16E7TC0E2", "01M16E7TC0E3", "01M16E7TC0E4"}) + fsmtest.Pick(c, []string{"", "X", "Y"}),
			From: did(), Fields: f}
	case 2:
		return FileCoordEvent{Venue: ch(), EventID: fsmtest.Pick(c, []string{"e1", "e2", "e3"}), ActorDID: did(), Ref: fsmtest.Pick(c, []string{"", "t1"}),
			Type: fsmtest.Pick(c, []string{EventTaskRequest, EventTaskUpdate, EventTaskComplete, EventEvidenceAttach, EventTaskClaim, "note"})}
	case 3:
		return RegisterManifest{DID: did(), Manifest: fsmtest.Pick(c, []string{`{"agent":{}}`, "not json"}), Class: "agent"}
	case 4:
		return SetActorClass{DID: did(), Class: fsmtest.Pick(c, []string{"agent", "human", ""}), Session: fsmtest.Pick(c, fsmtest.GenSessions)}
	case 5:
		return SetProvenance{DID: did(), Principal: did(), Certificate: fsmtest.Pick(c, []string{"{}", ""})}
	case 6:
		return SetPresence{DID: did(), State: fsmtest.Pick(c, []string{"active", "offline", ""})}
	case 7:
		return Heartbeat{DID: did(), TTL: fsmtest.Pick(c, []int64{0, 60, 1 << 40})}
	case 8:
		child, parent, channel := did(), did(), ch()
		if child == "did:plc:d3" {
			return Despawn{ParentDID: parent, ChildDID: "did:plc:d1"}
		}
		return RecordSpawn{Agent: SpawnedAgent{ChildDID: child, ParentDID: parent, Nick: "kid", Channel: channel}}
	case 9:
		return GrantCapability{Channel: ch(), ByDID: fsmtest.Pick(c, fsmtest.GenDIDs), Grant: CapabilityGrant{ID: fsmtest.Pick(c, []string{"g1", "g2"}),
			AgentDID: did(), Capability: "post", TTLSeconds: fsmtest.Pick(c, []int64{0, 1})}}
	case 10:
		return RevokeCapability{Channel: ch(), ByDID: fsmtest.Pick(c, fsmtest.GenDIDs), ID: fsmtest.Pick(c, []string{"g1", "g2"})}
	case 11:
		if c.Intn(2) == 0 {
			return RequestApproval{Channel: ch(), Approval: Approval{ID: fsmtest.Pick(c, []string{"a1", "a2"}), AgentDID: fsmtest.Pick(c, fsmtest.GenDIDs), Capability: "deploy"}}
		}
		return ResolveApproval{Channel: ch(), ByDID: fsmtest.Pick(c, fsmtest.GenDIDs), ID: fsmtest.Pick(c, []string{"a1", "a2"}), Approve: c.Intn(2) == 0}
	}
	return SystemActEvent{ActID: fsmtest.Pick(c, actIDs), Verb: fsmtest.Pick(c, []string{"expire", "auto-accept"}), EventID: fsmtest.Pick(c, []string{"01M16E7TC0S1", "01M16E7TC0S2"}), From: "did:web:x"}
}

// actFields builds an act event's fields.
func actFields(kind, verb, actID string, kv ...string) map[string]string {
	f := map[string]string{act.FieldKind: kind, act.FieldVerb: verb}
	if actID != "" {
		f[act.FieldID] = actID
	}
	for i := 0; i+1 < len(kv); i += 2 {
		f[kv[i]] = kv[i+1]
	}
	return f
}

// TestFileAct runs a handoff through the log: each step's code, and a refused step changes
// nothing (not the action, its history, nor the timeline).
func TestFileAct(t *testing.T) {
	h := fsmtest.NewHarness(t)
	const offer = "01M16E7TC0OFFER00000000000"
	steps := []struct {
		name  string
		cmd   fsm.Command
		want  fsm.Code
		state string
	}{
		{"directed offer", FileAct{Venue: "#ops", EventID: offer, From: didAlice, Fields: actFields("handoff", "offer", "", "act-to", didBob, "act-title", "Cite")}, fsm.OK, "offered"},
		{"same event id again", FileAct{Venue: "#ops", EventID: offer, From: didAlice, Fields: actFields("handoff", "offer", "")}, ErrActImmutableEvent, "offered"},
		{"other venue", FileAct{Venue: "#random", EventID: "01M16E7TC0ACC1000000000000", From: didBob, Fields: actFields("handoff", "accept", offer)}, ErrActWrongVenue, "offered"},
		{"unknown task", FileAct{Venue: "#ops", EventID: "01M16E7TC0ACC2000000000000", From: didBob, Fields: actFields("handoff", "accept", "01M16E7TC0NOSUCH0000000000")}, ErrActUnknownTask, "offered"},
		{"wrong sender", FileAct{Venue: "#ops", EventID: "01M16E7TC0ACC3000000000000", From: didCarol, Fields: actFields("handoff", "accept", offer)}, ErrActWrongSender, "offered"},
		{"out of order", FileAct{Venue: "#ops", EventID: "01M16E7TC0CMP1000000000000", From: didBob, Fields: actFields("handoff", "complete", offer)}, ErrActIllegalStep, "offered"},
		{"client confirm", FileAct{Venue: "#ops", EventID: "01M16E7TC0CNF1000000000000", From: didBob, Fields: actFields("handoff", "confirm", offer, "act-subject", offer)}, ErrActClientConfirm, "offered"},
		{"accept", FileAct{Venue: "#ops", EventID: "01M16E7TC0ACC4000000000000", From: didBob, Fields: actFields("handoff", "accept", offer)}, fsm.OK, "assigned"},
		{"complete", FileAct{Venue: "#ops", EventID: "01M16E7TC0CMP2000000000000", From: didBob, Fields: actFields("handoff", "complete", offer)}, fsm.OK, "completed"},
		{"after the end", FileAct{Venue: "#ops", EventID: "01M16E7TC0PRG1000000000000", From: didBob, Fields: actFields("handoff", "progress", offer)}, ErrActTerminalTask, "completed"},
		{"system expire after the end", SystemActEvent{ActID: offer, Verb: "expire", EventID: "01M16E7TC0EXP1000000000000", From: "did:web:x"}, ErrActTerminalTask, "completed"},
		{"bad field name", FileAct{Venue: "#ops", EventID: "01M16E7TC0BAD1000000000000", From: didBob, Fields: map[string]string{"act": "handoff", "x": "y"}}, fsm.ErrInvalid, "completed"},
		{"not a DID", FileAct{Venue: "#ops", EventID: "01M16E7TC0BAD2000000000000", From: "bob", Fields: actFields("handoff", "offer", "")}, fsm.ErrInvalid, "completed"},
	}
	for _, st := range steps {
		var before ActAction
		var beforeTimeline int
		h.Read(func(s *fsm.State) {
			before, _ = Of(s).Action(offer)
			beforeTimeline = len(Of(s).Timeline("#ops", func(*TimelineItem) bool { return true }, 1000))
		})
		if got := h.Do(st.cmd).Code; got != st.want {
			t.Fatalf("%s: code %v, want %v", st.name, got, st.want)
		}
		h.Read(func(s *fsm.State) {
			a, ok := Of(s).Action(offer)
			if !ok || a.State != st.state {
				t.Fatalf("%s: action %+v, want state %q", st.name, a, st.state)
			}
			n := len(Of(s).Timeline("#ops", func(*TimelineItem) bool { return true }, 1000))
			if st.want != fsm.OK && (len(a.Events) != len(before.Events) || n != beforeTimeline) {
				t.Fatalf("%s: a refused event was recorded", st.name)
			}
			if st.want == fsm.OK && (len(a.Events) != len(before.Events)+1 || n != beforeTimeline+1) {
				t.Fatalf("%s: the event was not recorded", st.name)
			}
		})
	}
	h.Read(func(s *fsm.State) {
		a, _ := Of(s).Action(offer)
		if a.Assignee != didBob || a.Offeree != didBob || a.Title != "Cite" || a.Venue != "#ops" || a.Events[0].ConfirmState != ConfirmConfirmed {
			t.Fatalf("action %+v", a)
		}
	})
}

// TestActRevival: a re-offer of a finished action is filed, one of a live action is refused, one
// naming an unknown action is annotated.
func TestActRevival(t *testing.T) {
	h := fsmtest.NewHarness(t)
	const first, second = "01M16E7TC0FIRST00000000000", "01M16E7TC0SECND00000000000"
	h.OK(FileAct{Venue: "#ops", EventID: first, From: didAlice, Fields: actFields("handoff", "offer", "")})
	if got := h.Do(FileAct{Venue: "#ops", EventID: second, From: didAlice, Fields: actFields("handoff", "offer", "", "act-replaces", first)}).Code; got != ErrActReplacesNotTerminal {
		t.Fatalf("reviving a live action: %v", got)
	}
	h.OK(FileAct{Venue: "#ops", EventID: "01M16E7TC0CANCL0000000000", From: didAlice, Fields: actFields("handoff", "cancel", first)})
	h.OK(FileAct{Venue: "#ops", EventID: second, From: didAlice, Fields: actFields("handoff", "offer", "", "act-replaces", first)})
	h.OK(FileAct{Venue: "#ops", EventID: "01M16E7TC0THIRD00000000000", From: didAlice, Fields: actFields("handoff", "offer", "", "act-replaces", "01M16E7TC0NEVERSEEN0000000")})
	h.Read(func(s *fsm.State) {
		a, _ := Of(s).Action(second)
		b, _ := Of(s).Action("01M16E7TC0THIRD00000000000")
		if a.Replaces != first || a.ReplacesUnknown || !b.ReplacesUnknown {
			t.Fatalf("revivals %+v %+v", a, b)
		}
	})
}

func TestCoordTasks(t *testing.T) {
	h := fsmtest.NewHarness(t)
	h.OK(
		FileCoordEvent{Venue: "#ops", EventID: "e1", Type: EventTaskRequest, ActorDID: didAlice, Payload: `{"description":"summarize"}`, Ref: "t1"},
		FileCoordEvent{Venue: "#ops", EventID: "e2", Type: EventTaskUpdate, ActorDID: didBob, Ref: "t1", Payload: "half"},
		FileCoordEvent{Venue: "#ops", EventID: "e3", Type: EventEvidenceAttach, ActorDID: didBob, Ref: "t1", Payload: "log", Evidence: "url"},
		FileCoordEvent{Venue: "#other", EventID: "e4", Type: EventTaskComplete, ActorDID: didBob, Ref: "t1"},
		FileCoordEvent{Venue: "#ops", EventID: "e5", Type: EventTaskFailed, ActorDID: didBob, Ref: "t1"},
	)
	if got := h.Do(FileCoordEvent{Venue: "#ops", EventID: "e6", Type: EventTaskRequest, ActorDID: didAlice, Ref: "t1"}).Code; got != ErrActImmutableEvent {
		t.Fatalf("second request of t1: %v", got)
	}
	for _, bad := range []FileCoordEvent{
		{Venue: "#ops", EventID: "e7", Type: EventTaskUpdate, ActorDID: "alice"},
		{Venue: "#ops", EventID: "e8", Type: EventTaskUpdate, ActorDID: didAlice, Payload: strings.Repeat("x", MaxCoordValue+1)},
		{Venue: "", EventID: "e9", Type: EventTaskUpdate, ActorDID: didAlice},
	} {
		if got := h.Do(bad).Code; got != fsm.ErrInvalid {
			t.Errorf("%+v: %v", bad, got)
		}
	}
	h.Read(func(s *fsm.State) {
		task, ok := Of(s).Task("t1")
		if !ok || task.Description != "summarize" || task.Status != TaskFailed || len(task.Events) != 4 || len(task.Evidence) != 1 || task.Channel != "#ops" {
			t.Fatalf("task %+v", task)
		}
		if n := len(Of(s).Timeline("#other", func(*TimelineItem) bool { return true }, 10)); n != 1 {
			t.Fatalf("#other timeline: %d", n)
		}
	})
}

func TestCoordGovernance(t *testing.T) {
	h := fsmtest.NewHarness(t)
	h.OK(fsmtest.World(didAlice, didBob)...)
	h.OK(fsm.Join{Session: "s-alice", Channel: "#ops"}, fsm.Join{Session: "s-bob", Channel: "#ops"})
	grant := CapabilityGrant{ID: "g1", AgentDID: didBob, Capability: "post", TTLSeconds: 60}
	for _, tc := range []struct {
		name string
		cmd  fsm.Command
		want fsm.Code
	}{
		{"grant by a non-op", GrantCapability{Channel: "#ops", ByDID: didBob, Grant: grant}, fsm.ErrChanOpNeeded},
		{"grant in no channel", GrantCapability{Channel: "#none", ByDID: didAlice, Grant: grant}, fsm.ErrNoSuchChannel},
		{"grant", GrantCapability{Channel: "#ops", ByDID: didAlice, Grant: grant}, fsm.OK},
		{"same grant id", GrantCapability{Channel: "#ops", ByDID: didAlice, Grant: grant}, ErrActImmutableEvent},
		{"approval by a non-member", RequestApproval{Channel: "#ops", Approval: Approval{ID: "a1", AgentDID: didCarol, Capability: "deploy"}}, fsm.ErrNotOnChannel},
		{"approval", RequestApproval{Channel: "#ops", Approval: Approval{ID: "a1", AgentDID: didBob, Capability: "deploy", Status: ApprovalApproved}}, fsm.OK},
		{"resolve by a non-op", ResolveApproval{Channel: "#ops", ByDID: didBob, ID: "a1", Approve: true}, fsm.ErrChanOpNeeded},
		{"resolve unknown", ResolveApproval{Channel: "#ops", ByDID: didAlice, ID: "a9", Approve: true}, ErrCoordNotFound},
		{"resolve", ResolveApproval{Channel: "#ops", ByDID: didAlice, ID: "a1", Approve: true}, fsm.OK},
		{"resolve twice", ResolveApproval{Channel: "#ops", ByDID: didAlice, ID: "a1"}, ErrApprovalResolved},
		{"revoke by a non-op", RevokeCapability{Channel: "#ops", ByDID: didBob, ID: "g1"}, fsm.ErrChanOpNeeded},
	} {
		if got := h.Do(tc.cmd).Code; got != tc.want {
			t.Fatalf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	h.Read(func(s *fsm.State) {
		g := Of(s).Capabilities("#ops", h.Now())
		if len(g) != 1 || g[0].GrantedBy != didAlice || g[0].ExpiresAt == 0 {
			t.Fatalf("grants %+v", g)
		}
		if n := len(Of(s).Capabilities("#ops", g[0].ExpiresAt)); n != 0 {
			t.Fatalf("an expired grant is listed")
		}
		ap := Of(s).Approvals("#ops")
		if len(ap) != 1 || ap[0].Status != ApprovalApproved || ap[0].ResolvedBy != didAlice {
			t.Fatalf("approvals %+v", ap)
		}
	})
	h.OK(RevokeCapability{Channel: "#ops", ByDID: didAlice, ID: "g1"})
	if got := h.Do(RevokeCapability{Channel: "#ops", ByDID: didAlice, ID: "g1"}).Code; got != ErrCoordNotFound {
		t.Fatalf("revoking twice: %v", got)
	}
}

func TestCoordActors(t *testing.T) {
	h := fsmtest.NewHarness(t)
	h.OK(fsmtest.World(didAlice, didBob)...)
	h.OK(
		SetActorClass{DID: didAlice, Class: "agent", Session: "s-alice"},
		SetProvenance{DID: didAlice, Principal: didBob, Certificate: "{}"},
		SetPresence{DID: didAlice, State: "active"},
		Heartbeat{DID: didAlice, State: "active", TTL: 60},
		RegisterManifest{DID: didAlice, Manifest: `{"agent":{"display_name":"A"}}`, Class: "agent"},
	)
	for _, bad := range []fsm.Command{
		Heartbeat{DID: didAlice, TTL: 0}, Heartbeat{DID: didAlice, TTL: MaxHeartbeatTTL + 1},
		SetProvenance{DID: didAlice, Principal: "bob", Certificate: "{}"}, SetProvenance{DID: didAlice, Verified: true, Certificate: "{}"},
		RegisterManifest{DID: didAlice, Manifest: "{"}, RegisterManifest{DID: didAlice, Manifest: `"` + strings.Repeat("x", MaxManifestBytes) + `"`},
		SetActorClass{DID: "alice", Class: "agent"},
	} {
		if got := h.Do(bad).Code; got != fsm.ErrInvalid {
			t.Errorf("%T %+v: %v", bad, bad, got)
		}
	}
	h.Read(func(s *fsm.State) {
		r, ok := Of(s).Actor(didAlice)
		if !ok || r.Class != "agent" || r.Provenance.Principal != didBob || r.Presence.State != "active" || r.Heartbeat.TTL != 60 {
			t.Fatalf("actor %+v", r)
		}
		if se, _ := s.Session("s-alice"); !se.Bot {
			t.Fatal("an agent's session is not in bot mode")
		}
		if m, ok := Of(s).Manifest(didAlice); !ok || !strings.Contains(m.Manifest, "display_name") {
			t.Fatalf("manifest %+v", m)
		}
	})
}

// golden are the pinned log encodings of samples, in order: entries already in logs must keep
// decoding to the same commands.
var golden = []string{
	"\x3c\x00" + fsmtest.GoldenEnv + "{\"venue\":\"#c\",\"event_id\":\"01M16E7TC0OFFER00000000000\",\"from\":\"did:plc:alice\",\"fields\":{\"act\":\"handoff\",\"act-to\":\"did:plc:bob\",\"act-verb\":\"offer\"},\"canonical\":\"{\\\"act\\\":\\\"handoff\\\"}\",\"signature\":\"ed25519:k:s\",\"receipt\":{\"event_id\":\"01M16E7TC0RCPT000000000000\",\"from\":\"did:web:x\",\"canonical\":\"{}\",\"signature\":\"ed25519:k:r\"}}}",
	"\x3d\x00" + fsmtest.GoldenEnv + "{\"venue\":\"#c\",\"event_id\":\"e1\",\"type\":\"task_request\",\"actor_did\":\"did:plc:alice\",\"payload\":\"{\\\"description\\\":\\\"d\\\"}\",\"ref\":\"t1\",\"evidence\":\"log\",\"signature\":\"ed25519:k:s\"}}",
	"\x3e\x00" + fsmtest.GoldenEnv + "{\"did\":\"did:plc:alice\",\"manifest\":\"{\\\"agent\\\":{}}\",\"class\":\"agent\"}}",
	"\x3f\x00" + fsmtest.GoldenEnv + "{\"did\":\"did:plc:alice\",\"class\":\"agent\",\"session\":\"s1\"}}",
	"\x40\x00" + fsmtest.GoldenEnv + "{\"did\":\"did:plc:alice\",\"verified\":true,\"principal\":\"did:plc:bob\",\"reason\":\"ok\",\"certificate\":\"{}\",\"expires\":1900000000}}",
	"\x41\x00" + fsmtest.GoldenEnv + "{\"did\":\"did:plc:alice\",\"state\":\"active\",\"status\":\"working\"}}",
	"\x42\x00" + fsmtest.GoldenEnv + "{\"did\":\"did:plc:alice\",\"state\":\"active\",\"ttl\":60}}",
	"\x43\x00" + fsmtest.GoldenEnv + "{\"agent\":{\"child_did\":\"did:key:z6Mk\",\"parent_did\":\"did:plc:alice\",\"parent_nick\":\"alice\",\"nick\":\"kid\",\"channel\":\"#c\",\"capabilities\":[\"post\"],\"ttl\":60,\"task_ref\":\"t1\",\"spawned_at\":5}}}",
	"\x44\x00" + fsmtest.GoldenEnv + "{\"channel\":\"#c\",\"by_did\":\"did:plc:alice\",\"grant\":{\"id\":\"g1\",\"agent_did\":\"did:plc:bob\",\"capability\":\"post\",\"scope\":\"#c\",\"ttl_seconds\":60,\"requires_approval\":true,\"rate_limit\":\"5/m\",\"granted_by\":\"x\",\"granted_at\":1,\"expires_at\":2}}}",
	"\x45\x00" + fsmtest.GoldenEnv + "{\"channel\":\"#c\",\"by_did\":\"did:plc:alice\",\"id\":\"g1\"}}",
	"\x46\x00" + fsmtest.GoldenEnv + "{\"channel\":\"#c\",\"approval\":{\"id\":\"a1\",\"agent_did\":\"did:plc:bob\",\"capability\":\"deploy\",\"details\":\"v2\",\"status\":\"x\",\"requested_at\":1,\"resolved_by\":\"y\",\"resolved_at\":2}}}",
	"\x47\x00" + fsmtest.GoldenEnv + "{\"channel\":\"#c\",\"by_did\":\"did:plc:alice\",\"id\":\"a1\",\"approve\":true}}",
	"\x48\x00" + fsmtest.GoldenEnv + "{\"act_id\":\"01M16E7TC0OFFER00000000000\",\"verb\":\"expire\",\"event_id\":\"01M16E7TC0EXP0000000000000\",\"from\":\"did:web:x\"}}",
	"\x4f\x00" + fsmtest.GoldenEnv + "{\"parent_did\":\"did:plc:alice\",\"child_did\":\"did:web:x:agents:a1:kid\"}}",
}

// TestActionsBounded: at MaxActions a new action drops the finished one updated longest ago,
// and is refused when every action is still running.
func TestActionsBounded(t *testing.T) {
	withBudget(t, unbounded) // MaxActions in one venue passes the venue's budget
	st := fsm.NewState()
	id := func(i int) string { return fmt.Sprintf("01M16E7TC0%016d", i) }
	for i := 0; i < MaxActions; i++ {
		if r := at(st, int64(i)).fileAct(FileAct{Venue: "#ops", EventID: id(i), From: fmt.Sprintf("did:plc:u%d", i%1000), Fields: actFields("handoff", "offer", "")}); r.Code != fsm.OK {
			t.Fatalf("offer %d: %v", i, r.Code)
		}
	}
	a := at(st, MaxActions)
	if r := a.fileAct(FileAct{Venue: "#ops", EventID: id(MaxActions), From: didAlice, Fields: actFields("handoff", "offer", "")}); r.Code != ErrCoordFull {
		t.Fatalf("with every action running: %v", r.Code)
	}
	for _, i := range []int{7, 3} {
		if r := a.fileAct(FileAct{Venue: "#ops", EventID: id(i) + "c", From: fmt.Sprintf("did:plc:u%d", i), Fields: actFields("handoff", "cancel", id(i))}); r.Code != fsm.OK {
			t.Fatalf("cancel %d: %v", i, r.Code)
		}
	}
	if r := a.fileAct(FileAct{Venue: "#ops", EventID: id(MaxActions), From: didAlice, Fields: actFields("handoff", "offer", "")}); r.Code != fsm.OK {
		t.Fatalf("after a cancel: %v", r.Code)
	}
	_, kept7 := Of(st).Action(id(7))
	_, kept3 := Of(st).Action(id(3))
	if len(section.Of(st).Actions) != MaxActions || kept7 == kept3 {
		t.Fatalf("%d actions; 3 kept %v, 7 kept %v", len(section.Of(st).Actions), kept3, kept7)
	}
	if _, ok := Of(st).ActEventAction(id(7) + "c"); ok != kept7 {
		t.Fatalf("the dropped action's events are still indexed, or the kept one's are not")
	}
}

// TestTimelineBounded: a venue keeps its newest MaxTimeline items.
func TestTimelineBounded(t *testing.T) {
	st := fsm.NewState()
	for i := 0; i < MaxTimeline+5; i++ {
		at(st, int64(i)).record("#ops", TimelineItem{Event: "e", EventID: fmt.Sprint(i)})
	}
	items := Of(st).Timeline("#ops", func(*TimelineItem) bool { return true }, MaxTimeline+5)
	if len(items) != MaxTimeline || items[0].EventID != fmt.Sprint(MaxTimeline+4) || items[len(items)-1].EventID != "5" {
		t.Fatalf("%d items, newest %s, oldest %s", len(items), items[0].EventID, items[len(items)-1].EventID)
	}
}

// TestRunningActionsPerDID: one DID keeps at most MaxRunningActionsPerDID actions running; a
// finished one frees a place, also after a snapshot restore.
func TestRunningActionsPerDID(t *testing.T) {
	h := fsmtest.NewHarness(t)
	id := func(i int) string { return fmt.Sprintf("01M16E7TC0%016d", i) }
	for i := 0; i < MaxRunningActionsPerDID; i++ {
		h.OK(FileAct{Venue: "#ops", EventID: id(i), From: didAlice, Fields: actFields("handoff", "offer", "")})
	}
	if got := h.Do(FileAct{Venue: "#ops", EventID: id(1000), From: didAlice, Fields: actFields("handoff", "offer", "")}).Code; got != ErrCoordFull {
		t.Fatalf("one more: %v", got)
	}
	h.OK(FileAct{Venue: "#ops", EventID: id(2000), From: didBob, Fields: actFields("handoff", "offer", "")})
	snap := fsmtest.Snapshot(t, h.Machine.Machine)
	if err := h.Machine.Machine.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatal(err)
	}
	if got := h.Do(FileAct{Venue: "#ops", EventID: id(1001), From: didAlice, Fields: actFields("handoff", "offer", "")}).Code; got != ErrCoordFull {
		t.Fatalf("one more after a restore: %v", got)
	}
	h.OK(FileAct{Venue: "#ops", EventID: id(3000), From: didAlice, Fields: actFields("handoff", "cancel", id(5))})
	h.OK(FileAct{Venue: "#ops", EventID: id(1002), From: didAlice, Fields: actFields("handoff", "offer", "")})
}

// TestTaskOwnership: only a task's requester and its assignee (the first other DID that claimed
// or reported on it) move it on; another member's task_complete is refused and changes nothing.
func TestTaskOwnership(t *testing.T) {
	ev := func(id, typ, actor string) FileCoordEvent {
		return FileCoordEvent{Venue: "#ops", EventID: id, Type: typ, ActorDID: actor, Ref: "t1", Payload: "p"}
	}
	for _, tc := range []struct {
		name  string
		setup []fsm.Command
		cmd   FileCoordEvent
		want  fsm.Code
	}{
		{"another member completes a claimed task", []fsm.Command{ev("e2", EventTaskClaim, didBob)}, ev("x", EventTaskComplete, didCarol), ErrCoordNotYours},
		{"another member updates a task in progress", []fsm.Command{ev("e2", EventTaskUpdate, didBob)}, ev("x", EventTaskUpdate, didCarol), ErrCoordNotYours},
		{"another member fails it", []fsm.Command{ev("e2", EventTaskUpdate, didBob)}, ev("x", EventTaskFailed, didCarol), ErrCoordNotYours},
		{"another member attaches evidence", []fsm.Command{ev("e2", EventTaskClaim, didBob)}, ev("x", EventEvidenceAttach, didCarol), ErrCoordNotYours},
		{"a second claim", []fsm.Command{ev("e2", EventTaskClaim, didBob)}, ev("x", EventTaskClaim, didCarol), ErrCoordNotYours},
		{"the requester claims an assigned task", []fsm.Command{ev("e2", EventTaskClaim, didBob)}, ev("x", EventTaskClaim, didAlice), ErrCoordNotYours},
		{"the assignee completes", []fsm.Command{ev("e2", EventTaskClaim, didBob)}, ev("x", EventTaskComplete, didBob), fsm.OK},
		{"the requester completes", []fsm.Command{ev("e2", EventTaskClaim, didBob)}, ev("x", EventTaskComplete, didAlice), fsm.OK},
		{"the first reporter becomes the assignee", nil, ev("x", EventTaskComplete, didCarol), fsm.OK},
		{"a finished task takes no status", []fsm.Command{ev("e2", EventTaskComplete, didBob)}, ev("x", EventTaskUpdate, didBob), ErrActTerminalTask},
		{"a finished task takes evidence", []fsm.Command{ev("e2", EventTaskComplete, didBob)}, ev("x", EventEvidenceAttach, didBob), fsm.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := fsmtest.NewHarness(t)
			h.OK(FileCoordEvent{Venue: "#ops", EventID: "e1", Type: EventTaskRequest, ActorDID: didAlice, Ref: "t1"})
			h.OK(tc.setup...)
			var before CoordTask
			var judged fsm.Code
			h.Read(func(s *fsm.State) {
				before, _ = Of(s).Task("t1")
				judged = Of(s).JudgeCoordEvent(tc.cmd.Venue, tc.cmd.Type, tc.cmd.Ref, tc.cmd.ActorDID)
			})
			if judged != tc.want {
				t.Fatalf("JudgeCoordEvent = %v, want %v", judged, tc.want)
			}
			if got := h.Do(tc.cmd).Code; got != tc.want {
				t.Fatalf("Apply = %v, want %v", got, tc.want)
			}
			h.Read(func(s *fsm.State) {
				after, _ := Of(s).Task("t1")
				if tc.want != fsm.OK && (after.Status != before.Status || len(after.Events) != len(before.Events) || after.Assignee != before.Assignee) {
					t.Fatalf("a refused event changed the task: %+v -> %+v", before, after)
				}
				if tc.want == fsm.OK && tc.cmd.ActorDID != didAlice && after.Assignee != tc.cmd.ActorDID {
					t.Fatalf("assignee %q, want %q", after.Assignee, tc.cmd.ActorDID)
				}
			})
		})
	}
}

// TestSpawnLimits: one DID spawns at most MaxSpawnedPerDID live agents, expired ones make room,
// only the parent despawns, and a child DID held by another parent is not taken over.
func TestSpawnLimits(t *testing.T) {
	h := fsmtest.NewHarness(t)
	spawn := func(parent, child string, ttl int64) RecordSpawn {
		return RecordSpawn{Agent: SpawnedAgent{ChildDID: child, ParentDID: parent, Nick: "kid", Channel: "#ops", TTL: ttl}}
	}
	child := func(i int) string { return fmt.Sprintf("did:web:x:agents:a:kid%d", i) }
	for i := range MaxSpawnedPerDID {
		h.OK(spawn(didAlice, child(i), 0))
	}
	if got := h.Do(spawn(didAlice, child(MaxSpawnedPerDID), 0)).Code; got != ErrCoordFull {
		t.Fatalf("spawn past the per-DID cap: %v", got)
	}
	h.OK(spawn(didBob, "did:web:x:agents:b:kid", 0)) // another DID is not affected
	if got := h.Do(spawn(didBob, child(0), 0)).Code; got != ErrActImmutableEvent {
		t.Fatalf("taking over another parent's child: %v", got)
	}
	if got := h.Do(Despawn{ParentDID: didBob, ChildDID: child(0)}).Code; got != ErrCoordNotYours {
		t.Fatalf("despawn by another DID: %v", got)
	}
	if got := h.Do(Despawn{ParentDID: didAlice, ChildDID: "did:web:x:agents:a:none"}).Code; got != ErrCoordNotFound {
		t.Fatalf("despawn of nothing: %v", got)
	}
	h.OK(Despawn{ParentDID: didAlice, ChildDID: child(0)})
	h.OK(spawn(didAlice, child(MaxSpawnedPerDID), 2)) // the freed slot, for 2 s (an entry is 1 s here)
	if got := h.Do(spawn(didAlice, child(MaxSpawnedPerDID+1), 0)).Code; got != ErrCoordFull {
		t.Fatalf("spawn past the cap again: %v", got)
	}
	h.OK(spawn(didAlice, child(MaxSpawnedPerDID+1), 0)) // 2 s later: the expired agent made room
	h.Read(func(s *fsm.State) {
		if _, ok := Of(s).Spawn(child(MaxSpawnedPerDID)); ok {
			t.Fatal("the expired agent is still recorded")
		}
		if _, ok := Of(s).Spawn(child(0)); ok {
			t.Fatal("the despawned agent is still recorded")
		}
	})
}

// TestTaskEarlyEvents: events about a task filed before its request (a member on another node
// answered the relayed request first) join the task when the request is filed, judged in order.
func TestTaskEarlyEvents(t *testing.T) {
	h := fsmtest.NewHarness(t)
	h.OK(
		FileCoordEvent{Venue: "#ops", EventID: "e2", Type: EventEvidenceAttach, ActorDID: didBob, Ref: "t1", Payload: `{"summary":"s"}`, Evidence: "code_review"},
		FileCoordEvent{Venue: "#ops", EventID: "e3", Type: EventTaskComplete, ActorDID: didCarol, Ref: "t1"}, // not the assignee
		FileCoordEvent{Venue: "#other", EventID: "e4", Type: EventTaskUpdate, ActorDID: didBob, Ref: "t1"},   // another venue
		FileCoordEvent{Venue: "#ops", EventID: "e1", Type: EventTaskRequest, ActorDID: didAlice, Ref: "t1", Payload: `{"description":"d"}`},
	)
	h.Read(func(s *fsm.State) {
		task, _ := Of(s).Task("t1")
		if len(task.Evidence) != 1 || task.Evidence[0].EventID != "e2" || task.Evidence[0].Type != "code_review" ||
			task.Assignee != didBob || task.Status != TaskInProgress || len(task.Events) != 2 {
			t.Fatalf("task %+v", task)
		}
	})
}

// TestManifestsBounded: at MaxManifests a new DID's manifest takes the place of the one
// registered longest ago by a DID with no live session; while every holder is online it is
// refused.
func TestManifestsBounded(t *testing.T) {
	h := fsmtest.NewHarness(t)
	did := func(i int) string { return fmt.Sprintf("did:plc:m%05d", i) }
	online := func(i int, did string) fsm.RegisterSession {
		return fsmtest.Session(fmt.Sprint("s", i), fmt.Sprint("n", i), did)
	}
	// The oldest holder is online, the second oldest is not: the second goes.
	h.OK(online(0, did(0)))
	for i := range MaxManifests {
		h.OK(RegisterManifest{DID: did(i), Manifest: `{}`})
	}
	h.OK(RegisterManifest{DID: "did:plc:new", Manifest: `{}`})
	h.Read(func(st *fsm.State) {
		if m := section.Of(st).Manifests; m[did(0)] == nil || m[did(1)] != nil || len(m) != MaxManifests {
			t.Fatalf("evicted the wrong manifest (%d kept)", len(m))
		}
	})
	for i := 1; i < MaxManifests; i++ {
		h.OK(online(i, did(i)))
	}
	h.OK(online(MaxManifests, "did:plc:new"))
	if r := h.Do(RegisterManifest{DID: "did:plc:another", Manifest: `{}`}); r.Code != ErrCoordFull {
		t.Fatalf("manifest with every holder online: %v", r.Code)
	}
}
