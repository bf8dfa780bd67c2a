package coord

import (
	"encoding/json"
	"strings"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// FileCoordEvent files a typed coordination event (+freeq.at/event) sent in a venue: the task
// events build delegated tasks, and every event lands on the venue's audit timeline.
type FileCoordEvent struct {
	Venue     string `json:"venue"`
	EventID   string `json:"event_id"`
	Type      string `json:"type"`
	ActorDID  string `json:"actor_did"`
	Payload   string `json:"payload,omitempty"`
	Ref       string `json:"ref,omitempty"` // the task id (+freeq.at/ref or +freeq.at/task-id)
	Evidence  string `json:"evidence,omitempty"`
	Signature string `json:"signature,omitempty"`
}

// RegisterManifest files an agent's manifest (validated and re-encoded as JSON by the gateway).
// It also makes the DID's actor class the manifest's.
type RegisterManifest struct {
	DID      string `json:"did"`
	Manifest string `json:"manifest"`
	Class    string `json:"class,omitempty"`
}

// SetActorClass records a DID's actor class (AGENT REGISTER). Session, when set, is the session
// that registered: an agent's session is in bot mode.
type SetActorClass struct {
	DID     string `json:"did"`
	Class   string `json:"class"`
	Session string `json:"session,omitempty"`
}

// SetProvenance records an actor's provenance declaration: a delegation certificate naming the
// person behind it (Verified, with Principal) or a declaration kept unverified, with the reason.
type SetProvenance struct {
	DID         string `json:"did"`
	Verified    bool   `json:"verified,omitempty"`
	Principal   string `json:"principal,omitempty"`
	Reason      string `json:"reason,omitempty"`
	Certificate string `json:"certificate"`
	Expires     int64  `json:"expires,omitempty"` // unix s
}

// SetPresence records an actor's declared presence (PRESENCE).
type SetPresence struct {
	DID    string `json:"did"`
	State  string `json:"state"`
	Status string `json:"status,omitempty"`
}

// Heartbeat records an actor's heartbeat: it counts as healthy for TTL seconds.
type Heartbeat struct {
	DID   string `json:"did"`
	State string `json:"state,omitempty"`
	TTL   int64  `json:"ttl"`
}

// RecordSpawn records an agent spawned by a connected agent.
type RecordSpawn struct {
	Agent SpawnedAgent `json:"agent"`
}

// GrantCapability grants an agent a capability in a channel; ByDID must be one of its operators.
type GrantCapability struct {
	Channel string          `json:"channel"`
	ByDID   string          `json:"by_did"`
	Grant   CapabilityGrant `json:"grant"`
}

// RevokeCapability removes a grant; ByDID must be one of the channel's operators.
type RevokeCapability struct {
	Channel string `json:"channel"`
	ByDID   string `json:"by_did"`
	ID      string `json:"id"`
}

// RequestApproval files an agent's request for approval in a channel it is a member of.
type RequestApproval struct {
	Channel  string   `json:"channel"`
	Approval Approval `json:"approval"`
}

// ResolveApproval approves or denies a pending approval; ByDID must be a channel operator.
type ResolveApproval struct {
	Channel string `json:"channel"`
	ByDID   string `json:"by_did"`
	ID      string `json:"id"`
	Approve bool   `json:"approve"`
}

func (FileCoordEvent) CommandType() fsm.CommandType   { return TypeFileCoordEvent }
func (RegisterManifest) CommandType() fsm.CommandType { return TypeRegisterManifest }
func (SetActorClass) CommandType() fsm.CommandType    { return TypeSetActorClass }
func (SetProvenance) CommandType() fsm.CommandType    { return TypeSetProvenance }
func (SetPresence) CommandType() fsm.CommandType      { return TypeSetPresence }
func (Heartbeat) CommandType() fsm.CommandType        { return TypeHeartbeat }
func (RecordSpawn) CommandType() fsm.CommandType      { return TypeRecordSpawn }
func (GrantCapability) CommandType() fsm.CommandType  { return TypeGrantCapability }
func (RevokeCapability) CommandType() fsm.CommandType { return TypeRevokeCapability }
func (RequestApproval) CommandType() fsm.CommandType  { return TypeRequestApproval }
func (ResolveApproval) CommandType() fsm.CommandType  { return TypeResolveApproval }

// Coordination event types that build tasks.
const (
	EventTaskRequest    = "task_request"
	EventTaskUpdate     = "task_update"
	EventTaskComplete   = "task_complete"
	EventTaskFailed     = "task_failed"
	EventEvidenceAttach = "evidence_attach"
	EventTaskClaim      = "task_claim"
)

// Task statuses.
const (
	TaskInProgress = "in_progress"
	TaskComplete   = "task_complete"
	TaskFailed     = "task_failed"
)

func (a *tx) fileCoordEvent(c FileCoordEvent) fsm.Result {
	if c.Venue == "" || len(c.Venue) > 600 || !validID(c.EventID) || c.Type == "" || len(c.Type) > 64 ||
		!validDID(c.ActorDID) || !validValue(c.Payload) || len(c.Ref) > 128 || len(c.Evidence) > 64 || len(c.Signature) > 256 {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	co := a.coord()
	ref := c.Ref
	switch c.Type {
	case EventTaskRequest:
		if ref == "" {
			ref = c.EventID
		}
		if co.Tasks[ref] != nil {
			return fsm.Result{Code: ErrActImmutableEvent}
		}
		if len(co.Tasks) >= MaxTasks && !hasFinishedTask(co) || runningTasksOf(co, c.ActorDID) >= MaxRunningTasksPerDID {
			return fsm.Result{Code: ErrCoordFull}
		}
		t := &CoordTask{TaskID: ref, Description: DescribeTask(c.Payload), Status: TaskInProgress,
			ActorDID: c.ActorDID, Channel: c.Venue, CreatedAt: a.Time(), Events: []TaskEvent{}, Evidence: []TaskEvidence{}}
		if !a.admit(c.ActorDID, c.Venue, taskHeadCost(t).plus(c.taskCost(a.Time())), "") {
			return fsm.Result{Code: ErrCoordBudget}
		}
		if len(co.Tasks) >= MaxTasks {
			a.evictFinishedTask()
		}
		if co.Tasks == nil {
			co.Tasks = map[string]*CoordTask{}
		}
		co.Tasks[ref] = t
		te := c.taskEvent(a.Time())
		t.Events = append(t.Events, te)
		co.chargeUnit(c.ActorDID, c.Venue, taskHeadCost(t).plus(taskEventUsage(te)), 1)
		// Events about this task that were filed before its request (another node's member
		// answered the relayed request first) join it now, judged as if they came after it.
		for _, it := range co.Timeline[c.Venue] {
			if it.RefID == ref && it.Category == CategoryCoordination && isTaskStep(it.Event) {
				_ = a.stepTask(t, TaskEvent{EventID: it.EventID, EventType: it.Event, ActorDID: it.ActorDID,
					Payload: it.Details["payload"], Signature: it.Signature, Timestamp: it.Timestamp}, it.Details["evidence_type"])
			}
		}
	case EventTaskUpdate, EventTaskComplete, EventTaskFailed, EventEvidenceAttach, EventTaskClaim:
		t := co.Tasks[ref]
		if t == nil || t.Channel != c.Venue {
			break // an event about a task not filed here stays on the timeline only
		}
		if code := judgeTaskStep(t, c.Type, c.ActorDID); code != fsm.OK {
			return fsm.Result{Code: code}
		}
		if !a.admit(c.ActorDID, c.Venue, c.taskCost(a.Time()), "t:"+ref) {
			return fsm.Result{Code: ErrCoordBudget}
		}
		if code := a.stepTask(t, c.taskEvent(a.Time()), c.Evidence); code != fsm.OK {
			return fsm.Result{Code: code}
		}
	}
	details := map[string]string{}
	if c.Payload != "" {
		details["payload"] = c.Payload
	}
	if c.Evidence != "" {
		details["evidence_type"] = c.Evidence
	}
	a.record(c.Venue, TimelineItem{Category: CategoryCoordination, Event: c.Type, ActorDID: c.ActorDID, RefID: ref,
		EventID: c.EventID, Signature: c.Signature, Details: details})
	return fsm.Result{Code: fsm.OK}
}

// isTaskStep reports whether a typed event moves a task on (every task event but its request).
func isTaskStep(typ string) bool {
	switch typ {
	case EventTaskUpdate, EventTaskComplete, EventTaskFailed, EventEvidenceAttach, EventTaskClaim:
		return true
	}
	return false
}

// judgeTaskStep says whether an event of type typ by actor may move task t on: taskStep, then
// the task's bounds.
func judgeTaskStep(t *CoordTask, typ, actor string) fsm.Code {
	if code := taskStep(t, typ, actor); code != fsm.OK {
		return code
	}
	if len(t.Events) >= MaxTaskEvents || typ == EventEvidenceAttach && len(t.Evidence) >= MaxTaskEvidence {
		return ErrCoordFull
	}
	return fsm.OK
}

// stepTask judges ev on task t (judgeTaskStep) and, when it passes, applies it: the assignee,
// evidence, status and history, charged to the event's DID.
func (a *tx) stepTask(t *CoordTask, ev TaskEvent, evidenceType string) fsm.Code {
	if code := judgeTaskStep(t, ev.EventType, ev.ActorDID); code != fsm.OK {
		return code
	}
	co := a.coord()
	co.usage() // counted before the task changes, so the charge below is counted once
	if t.Assignee == "" && ev.ActorDID != t.ActorDID {
		t.Assignee = ev.ActorDID
	}
	cost := taskEventUsage(ev)
	switch ev.EventType {
	case EventEvidenceAttach:
		evidence := TaskEvidence{EventID: ev.EventID, Type: evidenceType, Payload: ev.Payload, Timestamp: ev.Timestamp}
		t.Evidence = append(t.Evidence, evidence)
		cost = cost.plus(evidenceUsage(evidence))
	case EventTaskComplete:
		t.Status = TaskComplete
	case EventTaskFailed:
		t.Status = TaskFailed
	}
	t.Events = append(t.Events, ev)
	co.chargeUnit(ev.ActorDID, t.Channel, cost, 1)
	return fsm.OK
}

// taskStep judges a task event of type typ by actor on task t: only its requester and its
// assignee (the first other DID that claimed or reported on it) move it on, and a finished task
// takes evidence only.
func taskStep(t *CoordTask, typ, actor string) fsm.Code {
	switch {
	case actor != t.ActorDID && t.Assignee != "" && actor != t.Assignee:
		return ErrCoordNotYours
	case t.Status != TaskInProgress && typ != EventEvidenceAttach:
		return ErrActTerminalTask
	case typ == EventTaskClaim && t.Assignee != "" && actor != t.Assignee:
		return ErrCoordNotYours // the requester claiming a task another DID works on
	}
	return fsm.OK
}

// JudgeCoordEvent says what filing a typed coordination event would answer now for its task:
// fsm.OK, or the refusal (another DID's task, a finished task, a task id in use). An event about a
// task not filed in the venue is OK: it goes on the timeline only.
func (v View) JudgeCoordEvent(venue, eventType, ref, actor string) fsm.Code {
	if v.c == nil {
		return fsm.OK
	}
	t := v.c.Tasks[ref]
	switch {
	case eventType == EventTaskRequest && t != nil:
		return ErrActImmutableEvent
	case t == nil || t.Channel != venue:
		return fsm.OK
	case isTaskStep(eventType):
		return taskStep(t, eventType, actor)
	}
	return fsm.OK
}

// runningTasksOf counts the tasks did requested that are in progress.
func runningTasksOf(co *Coord, did string) int {
	n := 0
	for _, t := range co.Tasks {
		if t.ActorDID == did && t.Status == TaskInProgress {
			n++
		}
	}
	return n
}

// evictFinishedTask makes room for a task by dropping the finished one created longest ago (ties
// by id); false when every task is in progress.
func (a *tx) evictFinishedTask() bool {
	co := a.coord()
	var oldest *CoordTask
	for _, t := range co.Tasks {
		if t.Status != TaskInProgress && (oldest == nil || t.CreatedAt < oldest.CreatedAt || t.CreatedAt == oldest.CreatedAt && t.TaskID < oldest.TaskID) {
			oldest = t
		}
	}
	if oldest == nil {
		return false
	}
	a.forgetTask(oldest)
	return true
}

// hasFinishedTask reports whether some task is finished (evictFinishedTask would succeed).
func hasFinishedTask(co *Coord) bool {
	for _, t := range co.Tasks {
		if t.Status != TaskInProgress {
			return true
		}
	}
	return false
}

// taskEvent is the task event c files.
func (c FileCoordEvent) taskEvent(at int64) TaskEvent {
	return TaskEvent{EventID: c.EventID, EventType: c.Type, ActorDID: c.ActorDID, Payload: c.Payload, Signature: c.Signature, Timestamp: at}
}

// taskCost is what c adds to its task: the event and, for evidence_attach, the evidence.
func (c FileCoordEvent) taskCost(at int64) usage {
	cost := taskEventUsage(c.taskEvent(at))
	if c.Type == EventEvidenceAttach {
		cost = cost.plus(evidenceUsage(TaskEvidence{EventID: c.EventID, Type: c.Evidence, Payload: c.Payload}))
	}
	return cost
}

// DescribeTask takes a task's description from its payload: the "description" (or "task", or
// "title") of a JSON object, else the payload itself.
func DescribeTask(payload string) string {
	var obj map[string]any
	if json.Unmarshal([]byte(payload), &obj) == nil {
		for _, k := range []string{"description", "task", "title"} {
			if s, ok := obj[k].(string); ok {
				return s
			}
		}
	}
	return payload
}

func (a *tx) registerManifest(c RegisterManifest) fsm.Result {
	if !validDID(c.DID) || c.Manifest == "" || len(c.Manifest) > MaxManifestBytes || len(c.Class) > 32 || !json.Valid([]byte(c.Manifest)) {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	co := a.coord()
	if co.Manifests[c.DID] == nil && len(co.Manifests) >= MaxManifests && !a.evictManifest() {
		return fsm.Result{Code: ErrCoordFull}
	}
	r := a.actor(c.DID)
	if r == nil {
		return fsm.Result{Code: ErrCoordFull}
	}
	if co.Manifests == nil {
		co.Manifests = map[string]*AgentManifest{}
	}
	co.Manifests[c.DID] = &AgentManifest{AgentDID: c.DID, Manifest: c.Manifest, RegisteredAt: a.Time()}
	if c.Class != "" {
		r.Class = c.Class
	}
	return fsm.Result{Code: fsm.OK}
}

func (a *tx) setActorClass(c SetActorClass) fsm.Result {
	if !validDID(c.DID) || c.Class == "" || len(c.Class) > 32 {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	r := a.actor(c.DID)
	if r == nil {
		return fsm.Result{Code: ErrCoordFull}
	}
	r.Class = c.Class
	// An agent's session is a bot (user mode +B).
	a.SetSessionBot(c.Session, c.DID, c.Class == "agent")
	return fsm.Result{Code: fsm.OK}
}

func (a *tx) setProvenance(c SetProvenance) fsm.Result {
	if !validDID(c.DID) || (c.Principal != "" || c.Verified) && !validDID(c.Principal) || c.Certificate == "" ||
		!validValue(c.Certificate) || len(c.Reason) > 256 {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	r := a.actor(c.DID)
	if r == nil {
		return fsm.Result{Code: ErrCoordFull}
	}
	r.Provenance = &ActorProvenance{Verified: c.Verified, Principal: c.Principal, Reason: c.Reason, Certificate: c.Certificate,
		Expires: c.Expires, RecordedAt: a.Time()}
	return fsm.Result{Code: fsm.OK}
}

func (a *tx) setPresence(c SetPresence) fsm.Result {
	if !validDID(c.DID) || c.State == "" || len(c.State) > 32 || len(c.Status) > 256 {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	r := a.actor(c.DID)
	if r == nil {
		return fsm.Result{Code: ErrCoordFull}
	}
	r.Presence = &ActorPresence{State: c.State, Status: c.Status, UpdatedAt: a.Time()}
	return fsm.Result{Code: fsm.OK}
}

func (a *tx) heartbeat(c Heartbeat) fsm.Result {
	if !validDID(c.DID) || c.TTL <= 0 || c.TTL > MaxHeartbeatTTL || len(c.State) > 32 {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	r := a.actor(c.DID)
	if r == nil {
		return fsm.Result{Code: ErrCoordFull}
	}
	r.Heartbeat = &ActorHeartbeat{State: c.State, LastSeen: a.Time(), TTL: c.TTL}
	return fsm.Result{Code: fsm.OK}
}

func (a *tx) recordSpawn(c RecordSpawn) fsm.Result {
	s := c.Agent
	if !validDID(s.ChildDID) || !validDID(s.ParentDID) || s.Nick == "" || len(s.Nick) > fsm.MaxNickLen ||
		len(s.Channel) > fsm.MaxChannelLen || len(s.Capabilities) > 32 || s.TTL < 0 || len(s.TaskRef) > 128 {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	co := a.coord()
	now := a.Time()
	if prev := co.Spawned[s.ChildDID]; prev != nil && prev.ParentDID != s.ParentDID && !prev.Expired(now) {
		return fsm.Result{Code: ErrActImmutableEvent}
	}
	a.dropExpiredSpawns(s.ParentDID)
	if co.Spawned[s.ChildDID] == nil {
		if spawnedBy(co, s.ParentDID) >= MaxSpawnedPerDID {
			return fsm.Result{Code: ErrCoordFull}
		}
		if len(co.Spawned) >= MaxSpawned && !a.evictSpawn() {
			return fsm.Result{Code: ErrCoordFull}
		}
	}
	r := a.actor(s.ChildDID)
	if r == nil {
		return fsm.Result{Code: ErrCoordFull}
	}
	r.Class = "agent"
	if co.Spawned == nil {
		co.Spawned = map[string]*SpawnedAgent{}
	}
	s.SpawnedAt = a.Time()
	if s.Capabilities == nil {
		s.Capabilities = []string{}
	}
	co.Spawned[s.ChildDID] = &s
	if s.Channel != "" {
		a.record(s.Channel, TimelineItem{Category: CategoryGovernance, Event: "agent_spawned", ActorDID: s.ParentDID,
			RefID: s.ChildDID, Details: map[string]string{"nick": s.Nick, "capabilities": strings.Join(s.Capabilities, ",")}})
	}
	return fsm.Result{Code: fsm.OK}
}

// Despawn removes an agent its parent spawned (AGENT DESPAWN); only the parent may.
type Despawn struct {
	ParentDID string `json:"parent_did"`
	ChildDID  string `json:"child_did"`
}

func (Despawn) CommandType() fsm.CommandType { return TypeDespawn }

func (a *tx) despawn(c Despawn) fsm.Result {
	if !validDID(c.ParentDID) || !validDID(c.ChildDID) {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	co := a.coord()
	s := co.Spawned[c.ChildDID]
	switch {
	case s == nil:
		return fsm.Result{Code: ErrCoordNotFound}
	case s.ParentDID != c.ParentDID:
		return fsm.Result{Code: ErrCoordNotYours}
	}
	delete(co.Spawned, c.ChildDID)
	if s.Channel != "" {
		a.record(s.Channel, TimelineItem{Category: CategoryGovernance, Event: "agent_despawned", ActorDID: c.ParentDID,
			RefID: c.ChildDID, Details: map[string]string{"nick": s.Nick}})
	}
	return fsm.Result{Code: fsm.OK}
}

// Expired reports whether a spawned agent's ttl (seconds; 0 never) has run out at unix ms now.
func (s *SpawnedAgent) Expired(now int64) bool {
	return s.TTL > 0 && s.SpawnedAt+s.TTL*1000 <= now
}

// spawnedBy counts the agents did spawned that are still recorded.
func spawnedBy(co *Coord, did string) int {
	n := 0
	for _, s := range co.Spawned {
		if s.ParentDID == did {
			n++
		}
	}
	return n
}

// dropExpiredSpawns forgets the agents did spawned whose ttl ran out.
func (a *tx) dropExpiredSpawns(did string) {
	co := a.coord()
	for child, s := range co.Spawned {
		if s.ParentDID == did && s.Expired(a.Time()) {
			delete(co.Spawned, child)
		}
	}
}

// evictSpawn makes room in the full table of spawned agents: an expired one, else the one spawned
// longest ago by a DID with no live session (ties by child DID); false when every parent is online.
func (a *tx) evictSpawn() bool {
	co := a.coord()
	var drop *SpawnedAgent
	older := func(s *SpawnedAgent) bool {
		return drop == nil || s.SpawnedAt < drop.SpawnedAt || s.SpawnedAt == drop.SpawnedAt && s.ChildDID < drop.ChildDID
	}
	for _, s := range co.Spawned {
		if s.Expired(a.Time()) && (drop == nil || !drop.Expired(a.Time()) || older(s)) {
			drop = s
		}
	}
	if drop == nil {
		online := a.onlineDIDs()
		for _, s := range co.Spawned {
			if !online[s.ParentDID] && older(s) {
				drop = s
			}
		}
	}
	if drop == nil {
		return false
	}
	delete(co.Spawned, drop.ChildDID)
	return true
}

// onlineDIDs is the set of DIDs with a live session.
func (a *tx) onlineDIDs() map[string]bool {
	out := map[string]bool{}
	for se := range a.State().Sessions() {
		if se.DID != "" {
			out[se.DID] = true
		}
	}
	return out
}

// evictManifest makes room in the full manifest table: the manifest registered longest ago by a
// DID with no live session (ties by DID); false when every manifest's DID is online.
func (a *tx) evictManifest() bool {
	co := a.coord()
	var drop *AgentManifest
	online := a.onlineDIDs()
	for _, m := range co.Manifests {
		if !online[m.AgentDID] &&
			(drop == nil || m.RegisteredAt < drop.RegisteredAt || m.RegisteredAt == drop.RegisteredAt && m.AgentDID < drop.AgentDID) {
			drop = m
		}
	}
	if drop == nil {
		return false
	}
	delete(co.Manifests, drop.AgentDID)
	return true
}

// opCheck answers fsm.OK when did may act as an operator of the channel.
func (a *tx) opCheck(channel, did string) fsm.Code {
	if !a.State().ChannelExists(channel) {
		return fsm.ErrNoSuchChannel
	}
	if !a.State().IsChannelOpDID(channel, did) {
		return fsm.ErrChanOpNeeded
	}
	return fsm.OK
}

func (a *tx) grantCapability(c GrantCapability) fsm.Result {
	g := c.Grant
	if !validID(g.ID) || !validDID(g.AgentDID) || g.Capability == "" || len(g.Capability) > 128 || len(g.Scope) > 256 ||
		g.TTLSeconds < 0 || len(g.RateLimit) > 64 {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	if code := a.opCheck(c.Channel, c.ByDID); code != fsm.OK {
		return fsm.Result{Code: code}
	}
	co := a.coord()
	list := co.Capabilities[c.Channel]
	for _, old := range list {
		if old.ID == g.ID {
			return fsm.Result{Code: ErrActImmutableEvent}
		}
	}
	if len(list) >= MaxGrantsPerChannel {
		return fsm.Result{Code: ErrCoordFull}
	}
	g.GrantedBy, g.GrantedAt, g.ExpiresAt = c.ByDID, a.Time(), 0
	if g.TTLSeconds > 0 {
		g.ExpiresAt = a.Time() + g.TTLSeconds*1000
	}
	if co.Capabilities == nil {
		co.Capabilities = map[string][]*CapabilityGrant{}
	}
	co.Capabilities[c.Channel] = append(list, &g)
	a.record(c.Channel, TimelineItem{Category: CategoryGovernance, Event: "capability_granted", ActorDID: c.ByDID, RefID: g.ID,
		Details: map[string]string{"agent_did": g.AgentDID, "capability": g.Capability}})
	return fsm.Result{Code: fsm.OK}
}

func (a *tx) revokeCapability(c RevokeCapability) fsm.Result {
	if code := a.opCheck(c.Channel, c.ByDID); code != fsm.OK {
		return fsm.Result{Code: code}
	}
	co := a.coord()
	list := co.Capabilities[c.Channel]
	for i, g := range list {
		if g.ID == c.ID {
			co.Capabilities[c.Channel] = append(list[:i:i], list[i+1:]...)
			if len(co.Capabilities[c.Channel]) == 0 {
				delete(co.Capabilities, c.Channel)
			}
			a.record(c.Channel, TimelineItem{Category: CategoryGovernance, Event: "capability_revoked", ActorDID: c.ByDID, RefID: c.ID,
				Details: map[string]string{"agent_did": g.AgentDID, "capability": g.Capability}})
			return fsm.Result{Code: fsm.OK}
		}
	}
	return fsm.Result{Code: ErrCoordNotFound}
}

func (a *tx) requestApproval(c RequestApproval) fsm.Result {
	ap := c.Approval
	if !validID(ap.ID) || !validDID(ap.AgentDID) || ap.Capability == "" || len(ap.Capability) > 128 || !validValue(ap.Details) {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	if !a.State().ChannelExists(c.Channel) {
		return fsm.Result{Code: fsm.ErrNoSuchChannel}
	}
	if !a.State().IsChannelMemberDID(c.Channel, ap.AgentDID) {
		return fsm.Result{Code: fsm.ErrNotOnChannel}
	}
	co := a.coord()
	list := co.Approvals[c.Channel]
	for _, old := range list {
		if old.ID == ap.ID {
			return fsm.Result{Code: ErrActImmutableEvent}
		}
	}
	if len(list) >= MaxApprovalsPerChan {
		// Resolved approvals make room; pending ones never drop.
		for i, old := range list {
			if old.Status != ApprovalPending {
				list = append(list[:i:i], list[i+1:]...)
				break
			}
		}
		if len(list) >= MaxApprovalsPerChan {
			return fsm.Result{Code: ErrCoordFull}
		}
	}
	ap.Status, ap.RequestedAt, ap.ResolvedBy, ap.ResolvedAt = ApprovalPending, a.Time(), "", 0
	if co.Approvals == nil {
		co.Approvals = map[string][]*Approval{}
	}
	co.Approvals[c.Channel] = append(list, &ap)
	a.record(c.Channel, TimelineItem{Category: CategoryGovernance, Event: "approval_requested", ActorDID: ap.AgentDID, RefID: ap.ID,
		Details: map[string]string{"capability": ap.Capability}})
	return fsm.Result{Code: fsm.OK}
}

func (a *tx) resolveApproval(c ResolveApproval) fsm.Result {
	if code := a.opCheck(c.Channel, c.ByDID); code != fsm.OK {
		return fsm.Result{Code: code}
	}
	for _, ap := range a.coord().Approvals[c.Channel] {
		if ap.ID != c.ID {
			continue
		}
		if ap.Status != ApprovalPending {
			return fsm.Result{Code: ErrApprovalResolved}
		}
		ap.Status, ap.ResolvedBy, ap.ResolvedAt = ApprovalDenied, c.ByDID, a.Time()
		if c.Approve {
			ap.Status = ApprovalApproved
		}
		a.record(c.Channel, TimelineItem{Category: CategoryGovernance, Event: "approval_" + ap.Status, ActorDID: c.ByDID, RefID: ap.ID,
			Details: map[string]string{"agent_did": ap.AgentDID, "capability": ap.Capability}})
		return fsm.Result{Code: fsm.OK}
	}
	return fsm.Result{Code: ErrCoordNotFound}
}
