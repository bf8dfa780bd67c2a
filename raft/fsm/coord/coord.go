package coord

import (
	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/coord/act"
)

// Command types 60–79 are the coordination models'.
const (
	TypeFileAct          fsm.CommandType = 60
	TypeFileCoordEvent   fsm.CommandType = 61
	TypeRegisterManifest fsm.CommandType = 62
	TypeSetActorClass    fsm.CommandType = 63
	TypeSetProvenance    fsm.CommandType = 64
	TypeSetPresence      fsm.CommandType = 65
	TypeHeartbeat        fsm.CommandType = 66
	TypeRecordSpawn      fsm.CommandType = 67
	TypeGrantCapability  fsm.CommandType = 68
	TypeRevokeCapability fsm.CommandType = 69
	TypeRequestApproval  fsm.CommandType = 70
	TypeResolveApproval  fsm.CommandType = 71
	TypeSystemActEvent   fsm.CommandType = 72
	TypeDespawn          fsm.CommandType = 79
)

// fsm.Result codes 50–69 are the coordination models'. The first twelve are the act refusal keys, in
// the order of act.Refusals.
const (
	ErrActUnknownKind         fsm.Code = 50
	ErrActUnknownVerb         fsm.Code = 51
	ErrActTerminalTask        fsm.Code = 52
	ErrActIllegalStep         fsm.Code = 53
	ErrActWrongSender         fsm.Code = 54
	ErrActDeadlinePassed      fsm.Code = 55
	ErrActClientConfirm       fsm.Code = 56
	ErrActReplacesNotOpener   fsm.Code = 57
	ErrActReplacesMalformed   fsm.Code = 58
	ErrActReplacesNotTerminal fsm.Code = 59
	ErrActMissingRequirement  fsm.Code = 60
	ErrActAcceptsNotABid      fsm.Code = 61
	ErrActUnknownTask         fsm.Code = 62 // act-id names no action filed here
	ErrActWrongVenue          fsm.Code = 63 // the action lives in another venue
	ErrActImmutableEvent      fsm.Code = 64 // an event id already filed
	ErrCoordFull              fsm.Code = 65 // a coordination bound is reached
	ErrCoordNotFound          fsm.Code = 66 // a grant or approval id that does not exist
	ErrApprovalResolved       fsm.Code = 67 // an approval already approved or denied
	ErrCoordNotYours          fsm.Code = 69 // a task, spawned agent or manifest of another DID
)

// Bounds of the coordination state, enforced in Apply.
const (
	MaxActions              = 20000 // beyond it the finished action updated longest ago is dropped
	MaxActEvents            = 200   // per action
	MaxRunningActionsPerDID = 100   // actions one DID offered that are not finished
	MaxRunningTasksPerDID   = 100   // tasks one DID requested that are in progress
	MaxActFields            = 32
	MaxCoordValue           = 4096 // one field, payload or manifest value
	MaxManifestBytes        = 16 << 10
	MaxManifests            = 10000
	MaxTasks                = 20000
	MaxTaskEvents           = 200
	MaxTaskEvidence         = 100
	MaxSpawned              = 10000
	MaxSpawnedPerDID        = 16 // live (unexpired) agents one DID spawned
	MaxGrantsPerChannel     = 200
	MaxApprovalsPerChan     = 200
	MaxActors               = 50000
	MaxTimeline             = 1000 // per venue; the oldest items drop first
	MaxTimelineVenues       = 5000 // venues with a timeline; the one quiet longest is forgotten first
	MaxHeartbeatTTL         = 86400
)

// Confirm states of a filed act event.
const (
	ConfirmConfirmed   = "confirmed"
	ConfirmUnconfirmed = "unconfirmed"
	ConfirmSuperseded  = "superseded"
)

// Timeline categories.
const (
	CategoryCoordination = "coordination"
	CategoryGovernance   = "governance"
	CategoryPresence     = "presence"
)

// refusalCodes is the result code of each act refusal. The numbers are persisted: a refusal
// added to the rules gets a new number, never one of these.
var refusalCodes = map[act.Refusal]fsm.Code{
	act.UnknownKind: ErrActUnknownKind, act.UnknownVerb: ErrActUnknownVerb,
	act.TerminalTask: ErrActTerminalTask, act.IllegalStep: ErrActIllegalStep,
	act.WrongSender: ErrActWrongSender, act.DeadlinePassed: ErrActDeadlinePassed,
	act.ClientConfirm: ErrActClientConfirm, act.ReplacesNotOpener: ErrActReplacesNotOpener,
	act.ReplacesMalformed: ErrActReplacesMalformed, act.ReplacesNotTerminal: ErrActReplacesNotTerminal,
	act.MissingRequirement: ErrActMissingRequirement, act.AcceptsNotABid: ErrActAcceptsNotABid,
}

// section is the coordination models' part of the state: nil until the first command.
var section = fsm.NewSection[Coord]("coord")

// module registers the coordination models with the state machine.
func module() fsm.Module {
	codes := map[fsm.Code]string{
		ErrActUnknownTask: "act-unknown-task", ErrActWrongVenue: "act-wrong-venue",
		ErrActImmutableEvent: "act-immutable-event", ErrCoordFull: "coord-full", ErrCoordNotFound: "coord-not-found",
		ErrApprovalResolved: "approval-resolved", ErrCoordNotYours: "coord-not-yours", ErrCoordBudget: "coord-budget",
	}
	for r, c := range refusalCodes {
		codes[c] = "act-" + string(r)
	}
	return fsm.Module{
		Section: section,
		Codes:   codes,
		Commands: map[fsm.CommandType]fsm.CommandSpec{
			TypeFileAct:          handle("file-act", 0, (*tx).fileAct),
			TypeFileCoordEvent:   handle("file-coord-event", 0, (*tx).fileCoordEvent),
			TypeRegisterManifest: handle("register-manifest", 0, (*tx).registerManifest),
			TypeSetActorClass:    handle("set-actor-class", 0, (*tx).setActorClass),
			TypeSetProvenance:    handle("set-provenance", 0, (*tx).setProvenance),
			TypeSetPresence:      handle("set-presence", 0, (*tx).setPresence),
			TypeHeartbeat:        handle("heartbeat", 0, (*tx).heartbeat),
			TypeRecordSpawn:      handle("record-spawn", 0, (*tx).recordSpawn),
			TypeGrantCapability:  handle("grant-capability", 0, (*tx).grantCapability),
			TypeRevokeCapability: handle("revoke-capability", 0, (*tx).revokeCapability),
			TypeRequestApproval:  handle("request-approval", 0, (*tx).requestApproval),
			TypeResolveApproval:  handle("resolve-approval", 0, (*tx).resolveApproval),
			TypeSystemActEvent:   handle("system-act-event", 0, (*tx).systemActEvent),
			TypeDespawn:          handle("despawn", 1, (*tx).despawn),
		},
	}
}

func init() { fsm.Register(module()) }

// tx is one coordination command being applied.
type tx struct{ *fsm.Applier }

// handle registers command type C, introduced at feature level level, applied by f.
func handle[C fsm.Command](name string, level int, f func(*tx, C) fsm.Result) fsm.CommandSpec {
	return fsm.Handle(name, level, func(a *fsm.Applier, c C) fsm.Result { return f(&tx{a}, c) })
}

// RefusalCode is the result code of an act refusal.
func RefusalCode(r act.Refusal) fsm.Code { return refusalCodes[r] }

// Coord is the replicated coordination state, the module's section of the state.
type Coord struct {
	Actions map[string]*ActAction `json:"actions,omitempty"` // act id → action
	// ActEvents maps every filed act event id to its action (dedupe, bid lookup).
	ActEvents    map[string]string             `json:"act_events,omitempty"`
	Tasks        map[string]*CoordTask         `json:"tasks,omitempty"`
	Manifests    map[string]*AgentManifest     `json:"manifests,omitempty"` // DID →
	Spawned      map[string]*SpawnedAgent      `json:"spawned,omitempty"`   // child DID →
	Capabilities map[string][]*CapabilityGrant `json:"capabilities,omitempty"`
	Approvals    map[string][]*Approval        `json:"approvals,omitempty"`
	Actors       map[string]*ActorRecord       `json:"actors,omitempty"`
	Timeline     map[string][]TimelineItem     `json:"timeline,omitempty"` // venue → oldest first
	// running counts each offerer's unfinished actions: derived from Actions, never encoded,
	// rebuilt on first use (runningActionsOf).
	running map[string]int
	// budget is the accounting of budget.go: derived, never encoded, rebuilt on first use.
	budget *coordUsage
}

// ActAction is one ACT action: the checker's state plus what the REST surface shows.
type ActAction struct {
	act.Action
	Venue    string `json:"venue"`
	Caps     string `json:"caps,omitempty"`
	Title    string `json:"title,omitempty"`
	Replaces string `json:"replaces,omitempty"`
	// ReplacesUnknown annotates a revival naming an action this server never filed.
	ReplacesUnknown bool       `json:"replaces_unknown,omitempty"`
	Created         int64      `json:"created"` // unix ms
	Updated         int64      `json:"updated"` // unix ms
	Events          []ActEvent `json:"events"`
}

// ActEvent is one filed act event.
type ActEvent struct {
	EventID      string            `json:"event_id"`
	Verb         string            `json:"verb"`
	ActorDID     string            `json:"actor_did"`
	Fields       map[string]string `json:"fields,omitempty"`
	Canonical    string            `json:"canonical,omitempty"`
	Signature    string            `json:"signature,omitempty"`
	ConfirmState string            `json:"confirm_state"`
	Receipt      *ActReceipt       `json:"receipt,omitempty"`
	State        string            `json:"state"` // the action's state after it
	Timestamp    int64             `json:"timestamp"`
}

// ActReceipt is the server's confirm receipt of an event: its own act event, signed with the
// server key by the proposing node.
type ActReceipt struct {
	EventID   string `json:"event_id"`
	From      string `json:"from"`
	Canonical string `json:"canonical"`
	Signature string `json:"signature"`
}

// Task is a delegated task built from typed coordination events.
type CoordTask struct {
	TaskID      string `json:"task_id"`
	Description string `json:"description"`
	Status      string `json:"status"`
	ActorDID    string `json:"actor_did"`
	// Assignee is the DID working on the task: the first other DID that claimed or reported on
	// it. Only the requester (ActorDID) and the assignee move a task on.
	Assignee  string         `json:"assignee,omitempty"`
	Channel   string         `json:"channel"`
	CreatedAt int64          `json:"created_at"` // unix ms
	Events    []TaskEvent    `json:"events"`
	Evidence  []TaskEvidence `json:"evidence"`
}

// TaskEvent is one event of a task.
type TaskEvent struct {
	EventID   string `json:"event_id"`
	EventType string `json:"event_type"`
	ActorDID  string `json:"actor_did"`
	Payload   string `json:"payload"`
	Signature string `json:"signature,omitempty"`
	Timestamp int64  `json:"timestamp"`
}

// TaskEvidence is evidence attached to a task.
type TaskEvidence struct {
	EventID   string `json:"event_id"`
	Type      string `json:"type,omitempty"`
	Payload   string `json:"payload"`
	Timestamp int64  `json:"timestamp"`
}

// AgentManifest is a manifest an agent published (validated JSON).
type AgentManifest struct {
	AgentDID     string `json:"agent_did"`
	Manifest     string `json:"manifest"` // JSON object
	RegisteredAt int64  `json:"registered_at"`
}

// SpawnedAgent is an agent a connected agent spawned through this server.
type SpawnedAgent struct {
	ChildDID     string   `json:"child_did"`
	ParentDID    string   `json:"parent_did"`
	ParentNick   string   `json:"parent_nick,omitempty"`
	Nick         string   `json:"nick"`
	Channel      string   `json:"channel"`
	Capabilities []string `json:"capabilities"`
	TTL          int64    `json:"ttl"`
	TaskRef      string   `json:"task_ref,omitempty"`
	SpawnedAt    int64    `json:"spawned_at"`
}

// CapabilityGrant is a capability a channel operator granted an agent in a channel.
type CapabilityGrant struct {
	ID               string `json:"id"`
	AgentDID         string `json:"agent_did"`
	Capability       string `json:"capability"`
	Scope            string `json:"scope,omitempty"`
	TTLSeconds       int64  `json:"ttl_seconds,omitempty"`
	RequiresApproval bool   `json:"requires_approval"`
	RateLimit        string `json:"rate_limit,omitempty"`
	GrantedBy        string `json:"granted_by"`
	GrantedAt        int64  `json:"granted_at"`           // unix ms
	ExpiresAt        int64  `json:"expires_at,omitempty"` // unix ms; 0 never
}

// Approval is an agent's request for a channel operator's approval.
type Approval struct {
	ID          string `json:"id"`
	AgentDID    string `json:"agent_did"`
	Capability  string `json:"capability"`
	Details     string `json:"details,omitempty"`
	Status      string `json:"status"` // pending, approved, denied
	RequestedAt int64  `json:"requested_at"`
	ResolvedBy  string `json:"resolved_by,omitempty"`
	ResolvedAt  int64  `json:"resolved_at,omitempty"`
}

// Approval states.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
)

// ActorRecord is what the server knows of an actor beyond its sessions.
type ActorRecord struct {
	DID        string           `json:"did"`
	Class      string           `json:"class,omitempty"`
	Provenance *ActorProvenance `json:"provenance,omitempty"`
	Presence   *ActorPresence   `json:"presence,omitempty"`
	Heartbeat  *ActorHeartbeat  `json:"heartbeat,omitempty"`
}

// ActorProvenance is an actor's provenance declaration; when Verified, a delegation certificate
// whose Principal (the person who vouches for the actor) signed it.
type ActorProvenance struct {
	Verified    bool   `json:"verified"`
	Principal   string `json:"principal,omitempty"`
	Reason      string `json:"reason,omitempty"`
	Certificate string `json:"certificate"` // the declaration as presented (JSON)
	Expires     int64  `json:"expires,omitempty"`
	RecordedAt  int64  `json:"recorded_at"` // unix ms
}

// ActorPresence is an actor's declared presence.
type ActorPresence struct {
	State     string `json:"state"`
	Status    string `json:"status,omitempty"`
	UpdatedAt int64  `json:"updated_at"`
}

// ActorHeartbeat is an actor's last heartbeat.
type ActorHeartbeat struct {
	State    string `json:"state,omitempty"`
	LastSeen int64  `json:"last_seen"` // unix ms
	TTL      int64  `json:"ttl_seconds"`
}

// TimelineItem is one entry of a venue's audit timeline.
type TimelineItem struct {
	Timestamp int64             `json:"timestamp"` // unix ms
	Category  string            `json:"category"`
	Event     string            `json:"event"`
	ActorDID  string            `json:"actor_did"`
	RefID     string            `json:"ref_id,omitempty"`
	Details   map[string]string `json:"details,omitempty"`
	Signature string            `json:"signature,omitempty"`
	EventID   string            `json:"event_id,omitempty"`
}

// coord returns the coordination state, creating it on first use.
func (a *tx) coord() *Coord { return section.Make(a.Applier) }

// record appends an item to a venue's timeline, dropping the oldest beyond MaxTimeline and the
// timeline budgets (fitTimeline).
func (a *tx) record(venue string, it TimelineItem) {
	c := a.coord()
	if c.Timeline == nil {
		c.Timeline = map[string][]TimelineItem{}
	}
	it.Timestamp = a.Time()
	if _, known := c.Timeline[venue]; !known && len(c.Timeline) >= MaxTimelineVenues {
		// Forget the venue whose last entry is the oldest (ties by name).
		drop, at := "", int64(0)
		for v, items := range c.Timeline {
			last := items[len(items)-1].Timestamp
			if drop == "" || last < at || last == at && v < drop {
				drop, at = v, last
			}
		}
		a.forgetTimeline(drop)
	}
	n := timelineItemBytes(it)
	list := append(a.fitTimeline(venue, n), it)
	if len(list) > MaxTimeline {
		for _, old := range list[:len(list)-MaxTimeline] {
			a.dropTimelineBytes(venue, timelineItemBytes(old))
		}
		list = append(list[:0:0], list[len(list)-MaxTimeline:]...)
	}
	c.Timeline[venue] = list
	a.addTimelineBytes(venue, n)
}

// actor returns the record of did, creating it; nil when the actor table is full.
func (a *tx) actor(did string) *ActorRecord {
	c := a.coord()
	if r := c.Actors[did]; r != nil {
		return r
	}
	if len(c.Actors) >= MaxActors {
		return nil
	}
	if c.Actors == nil {
		c.Actors = map[string]*ActorRecord{}
	}
	r := &ActorRecord{DID: did}
	c.Actors[did] = r
	return r
}

// validValue bounds one free-text value of a coordination command.
func validValue(s string) bool { return len(s) <= MaxCoordValue }

// validID bounds an id chosen by a client or a proposer.
func validID(s string) bool { return s != "" && len(s) <= 128 }

// validDID is a cheap shape check; the gateways resolve and verify DIDs.
func validDID(s string) bool { return len(s) > 4 && len(s) <= 256 && s[:4] == "did:" }
