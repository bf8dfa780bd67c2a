package coord

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/raft/fsm"
	fsmcoord "github.com/palaver-chat/palaver/raft/fsm/coord"
)

//go:embed openapi.yaml
var contractFragment []byte

// Page sizes of the list routes (the contract caps every limit at 200).
const (
	defaultActionLimit   = 100
	defaultTimelineLimit = 200
	maxLimit             = 200
	maxBodyBytes         = 64 << 10
)

// Mount puts the coordination routes on the REST server and adds actor class, provenance,
// presence, heartbeat and spawn details to /api/v1/actors/{did}.
func (s *Service) Mount(r *rest.Server) error {
	e := r.Engine()
	api := e.Group("/api/v1")
	api.GET("/actions", r.OptionalBearer(), s.listActions)
	api.GET("/actions/:act_id", r.OptionalBearer(), s.getAction)
	api.GET("/tasks/:task_id", r.OptionalBearer(), s.getTask)
	api.GET("/agents/manifests", s.listManifests)
	api.POST("/agents/manifests", r.RequireBearer(), r.RateLimit(rest.RecordRoutes), s.postManifest)
	api.GET("/agents/manifests/:did", s.getManifest)
	api.GET("/agents/spawned", s.listSpawned)
	api.GET("/channels/:name/agent-capabilities", r.OptionalBearer(), s.listCapabilities)
	api.POST("/channels/:name/agent-capabilities", r.RequireBearer(), r.RateLimit(rest.RecordRoutes), s.grantCapability)
	api.DELETE("/channels/:name/agent-capabilities/:id", r.RequireBearer(), s.revokeCapability)
	api.GET("/channels/:name/approvals", r.OptionalBearer(), s.listApprovals)
	api.POST("/channels/:name/approvals", r.RequireBearer(), r.RateLimit(rest.RecordRoutes), s.requestApproval)
	api.POST("/channels/:name/approvals/:id", r.RequireBearer(), s.resolveApproval)
	api.GET("/channels/:name/events", r.OptionalBearer(), s.timeline(false))
	api.GET("/channels/:name/audit", r.OptionalBearer(), s.timeline(true))
	r.AddActorDetails(s.actorDetails)
	if err := r.DescribeRoutes(contractFragment); err != nil {
		return fmt.Errorf("coordination routes: %w", err)
	}
	return nil
}

// Action is the REST shape of an ACT action.
type Action struct {
	ActID            string  `json:"act_id"`
	Kind             string  `json:"kind"`
	Venue            string  `json:"venue"`
	Origin           string  `json:"origin"`
	State            string  `json:"state"`
	StoredState      string  `json:"stored_state"`
	Offerer          string  `json:"offerer"`
	Offeree          *string `json:"offeree"`
	Assignee         *string `json:"assignee"`
	Caps             *string `json:"caps"`
	Title            *string `json:"title"`
	Deadline         *int64  `json:"deadline"`
	BidDeadline      *int64  `json:"bid_deadline"`
	Replaces         *string `json:"replaces"`
	ReplacesUnknown  bool    `json:"replaces_unknown"`
	Created          int64   `json:"created"`
	Updated          int64   `json:"updated"`
	DroppedUnchecked int     `json:"dropped_unchecked"`
}

// ActionEvent is one event of an action's history.
type ActionEvent struct {
	EventID      string               `json:"event_id"`
	Verb         string               `json:"verb"`
	ActorDID     string               `json:"actor_did"`
	Venue        string               `json:"venue"`
	State        string               `json:"state"`
	Fields       map[string]string    `json:"fields"`
	Canonical    string               `json:"canonical"`
	Signature    string               `json:"signature"`
	ConfirmState string               `json:"confirm_state"`
	Receipt      *fsmcoord.ActReceipt `json:"receipt"`
	Timestamp    int64                `json:"timestamp"`
}

func optional[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

func actionOf(a fsmcoord.ActAction) Action {
	return Action{ActID: a.ID, Kind: a.Kind, Venue: a.Venue, State: a.State, StoredState: a.State, Offerer: a.Offerer,
		Offeree: optional(a.Offeree), Assignee: optional(a.Assignee), Caps: optional(a.Caps), Title: optional(a.Title),
		Deadline: optional(a.Deadline), BidDeadline: optional(a.BidDeadline), Replaces: optional(a.Replaces),
		ReplacesUnknown: a.ReplacesUnknown, Created: a.Created / 1000, Updated: a.Updated / 1000}
}

// readable reports whether the request may read a venue (see fsm.State.VenueReadable).
func readable(st *fsm.State, venue, did string) bool {
	_, ok := st.VenueReadable(venue, did)
	return ok
}

func (s *Service) listActions(c *gin.Context) {
	limit, ok := rest.LimitParam(c, defaultActionLimit, maxLimit)
	if !ok {
		return
	}
	kind, assignee, state := c.Query("kind"), c.Query("assignee"), c.Query("state")
	did := rest.DID(c)
	var list []fsmcoord.ActAction
	s.read(func(st *fsm.State) {
		list = fsmcoord.Of(st).Actions(func(a *fsmcoord.ActAction) bool {
			return (kind == "" || a.Kind == kind) && (assignee == "" || a.Assignee == assignee) &&
				(state == "" || a.State == state) && readable(st, a.Venue, did)
		}, limit)
	})
	out := make([]Action, len(list))
	for i, a := range list {
		out[i] = actionOf(a)
	}
	c.PureJSON(http.StatusOK, gin.H{"tasks": out})
}

// access answers 404 (notFound) or 403 unless a looked-up item was found and may be read.
func access(c *gin.Context, found, allowed bool, notFound string) bool {
	switch {
	case !found:
		rest.WriteError(c, http.StatusNotFound, notFound)
	case !allowed:
		rest.WriteError(c, http.StatusForbidden, "Its venue is not readable with your credentials")
	}
	return found && allowed
}

func (s *Service) getAction(c *gin.Context) {
	id := c.Param("act_id")
	var (
		a       fsmcoord.ActAction
		found   bool
		allowed bool
	)
	s.read(func(st *fsm.State) {
		if a, found = fsmcoord.Of(st).Action(id); found {
			allowed = readable(st, a.Venue, rest.DID(c))
		}
	})
	if !access(c, found, allowed, "No action "+short(id)) {
		return
	}
	events := make([]ActionEvent, len(a.Events))
	for i, e := range a.Events {
		events[i] = ActionEvent{EventID: e.EventID, Verb: e.Verb, ActorDID: e.ActorDID, Venue: a.Venue, State: e.State,
			Fields: e.Fields, Canonical: e.Canonical, Signature: e.Signature, ConfirmState: e.ConfirmState, Receipt: e.Receipt,
			Timestamp: e.Timestamp / 1000}
	}
	c.PureJSON(http.StatusOK, gin.H{"act_id": a.ID, "venue": a.Venue, "task": actionOf(a), "events": events})
}

// Task is the REST shape of a delegated task (freeq's): payloads as JSON values.
type Task struct {
	TaskID      string         `json:"task_id"`
	Description string         `json:"description"`
	Status      string         `json:"status"`
	ActorDID    string         `json:"actor_did"`
	Assignee    *string        `json:"assignee"`
	Channel     string         `json:"channel"`
	CreatedAt   int64          `json:"created_at"`
	Events      []TaskEvent    `json:"events"`
	Evidence    []TaskEvidence `json:"evidence"`
}

// TaskEvent is one event of a task.
type TaskEvent struct {
	EventID   string          `json:"event_id"`
	EventType string          `json:"event_type"`
	ActorDID  string          `json:"actor_did"`
	Payload   json.RawMessage `json:"payload"`
	Signature *string         `json:"signature"`
	Timestamp int64           `json:"timestamp"`
}

// TaskEvidence is one piece of evidence attached to a task.
type TaskEvidence struct {
	EventID   string          `json:"event_id"`
	Type      *string         `json:"type"`
	Payload   json.RawMessage `json:"payload"`
	Timestamp int64           `json:"timestamp"`
}

// payloadJSON is a filed payload as a JSON value: the (percent-decoded) JSON text, a JSON string
// when it is not JSON, and {} when there is none.
func payloadJSON(raw string) json.RawMessage {
	if raw == "" {
		return json.RawMessage(`{}`)
	}
	if v := DecodePayload(raw); json.Valid([]byte(v)) {
		return json.RawMessage(v)
	} else if b, err := json.Marshal(v); err == nil {
		return b
	}
	return json.RawMessage(`{}`)
}

func taskOf(t fsmcoord.CoordTask) Task {
	out := Task{TaskID: t.TaskID, Description: t.Description, Status: t.Status, ActorDID: t.ActorDID, Assignee: optional(t.Assignee),
		Channel: t.Channel, CreatedAt: t.CreatedAt / 1000, Events: make([]TaskEvent, len(t.Events)), Evidence: make([]TaskEvidence, len(t.Evidence))}
	for i, e := range t.Events {
		if e.EventType == fsmcoord.EventTaskRequest && e.EventID != "" {
			out.Description = fsmcoord.DescribeTask(DecodePayload(e.Payload))
		}
		out.Events[i] = TaskEvent{EventID: e.EventID, EventType: e.EventType, ActorDID: e.ActorDID, Payload: payloadJSON(e.Payload),
			Signature: optional(e.Signature), Timestamp: e.Timestamp / 1000}
	}
	for i, e := range t.Evidence {
		out.Evidence[i] = TaskEvidence{EventID: e.EventID, Type: optional(e.Type), Payload: payloadJSON(e.Payload), Timestamp: e.Timestamp / 1000}
	}
	return out
}

func (s *Service) getTask(c *gin.Context) {
	id := c.Param("task_id")
	var (
		t       fsmcoord.CoordTask
		found   bool
		allowed bool
	)
	s.read(func(st *fsm.State) {
		if t, found = fsmcoord.Of(st).Task(id); found {
			allowed = readable(st, t.Channel, rest.DID(c))
		}
	})
	if !access(c, found, allowed, "Task not found: "+short(id)) {
		return
	}
	c.PureJSON(http.StatusOK, taskOf(t))
}

// manifestOut is a stored manifest with its document as an object.
type manifestOut struct {
	AgentDID     string          `json:"agent_did"`
	Manifest     json.RawMessage `json:"manifest"`
	RegisteredAt int64           `json:"registered_at"`
}

func (s *Service) listManifests(c *gin.Context) {
	var list []fsmcoord.AgentManifest
	s.read(func(st *fsm.State) { list = fsmcoord.Of(st).Manifests() })
	out := make([]manifestOut, len(list))
	for i, m := range list {
		out[i] = manifestOut{AgentDID: m.AgentDID, Manifest: json.RawMessage(m.Manifest), RegisteredAt: m.RegisteredAt / 1000}
	}
	c.PureJSON(http.StatusOK, gin.H{"manifests": out})
}

func (s *Service) getManifest(c *gin.Context) {
	did := c.Param("did")
	var (
		m     fsmcoord.AgentManifest
		found bool
	)
	s.read(func(st *fsm.State) { m, found = fsmcoord.Of(st).Manifest(did) })
	if !found {
		rest.WriteError(c, http.StatusNotFound, "Manifest not found for "+short(did))
		return
	}
	c.PureJSON(http.StatusOK, manifestOut{AgentDID: m.AgentDID, Manifest: json.RawMessage(m.Manifest), RegisteredAt: m.RegisteredAt / 1000})
}

// readBody reads a request body of at most max bytes, answering 413 or 400 itself.
func readBody(c *gin.Context, max int) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, int64(max)))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		rest.WriteError(c, http.StatusRequestEntityTooLarge, fmt.Sprintf("The body is over %d bytes", max))
		return nil, false
	case err != nil:
		rest.WriteError(c, http.StatusBadRequest, "The body could not be read")
		return nil, false
	}
	return body, true
}

// answerFail answers a refused proposal: 503 when it did not reach the log, else status.
func answerFail(c *gin.Context, f *Fail, status int) {
	if f.Code == "TEMPORARILY_UNAVAILABLE" {
		rest.WriteError(c, http.StatusServiceUnavailable, f.Text)
		return
	}
	rest.WriteError(c, status, f.Text)
}

func (s *Service) postManifest(c *gin.Context) {
	body, ok := readBody(c, s.cfg.Options.MaxManifestBytes)
	if !ok {
		return
	}
	did := rest.DID(c)
	if _, f := s.PublishManifest(c.Request.Context(), did, body); f != nil {
		answerFail(c, f, http.StatusBadRequest)
		return
	}
	s.getManifestOf(c, did, http.StatusCreated)
}

func (s *Service) getManifestOf(c *gin.Context, did string, status int) {
	var m fsmcoord.AgentManifest
	s.read(func(st *fsm.State) { m, _ = fsmcoord.Of(st).Manifest(did) })
	c.PureJSON(status, manifestOut{AgentDID: m.AgentDID, Manifest: json.RawMessage(m.Manifest), RegisteredAt: m.RegisteredAt / 1000})
}

func (s *Service) listSpawned(c *gin.Context) {
	var list []fsmcoord.SpawnedAgent
	s.read(func(st *fsm.State) { list = fsmcoord.Of(st).Spawned() })
	now := s.cfg.Now().UnixMilli()
	out := list[:0]
	for _, a := range list {
		if !a.Expired(now) {
			a.SpawnedAt /= 1000
			out = append(out, a)
		}
	}
	c.PureJSON(http.StatusOK, gin.H{"spawned_agents": out})
}

// withChannel reads the channel path parameter and checks that the request may read it,
// answering 400, 403 or 404 itself.
func (s *Service) withChannel(c *gin.Context) (string, bool) {
	name, ok := rest.ChannelParam(c, c.Param("name"))
	if !ok {
		return "", false
	}
	found, allowed := false, false
	s.read(func(st *fsm.State) { found, allowed = st.VenueReadable(name, rest.DID(c)) })
	switch {
	case !found:
		rest.WriteError(c, http.StatusNotFound, "No such channel: "+name)
	case !allowed:
		rest.WriteError(c, http.StatusForbidden, name+" is restricted (+i, +k or +E); send the bearer token of a member, its founder or one of its operators")
	}
	return name, found && allowed
}

func (s *Service) listCapabilities(c *gin.Context) {
	name, ok := s.withChannel(c)
	if !ok {
		return
	}
	var list []fsmcoord.CapabilityGrant
	now := s.cfg.Now().UnixMilli()
	s.read(func(st *fsm.State) { list = fsmcoord.Of(st).Capabilities(name, now) })
	for i := range list {
		list[i].GrantedAt /= 1000
		list[i].ExpiresAt /= 1000
	}
	c.PureJSON(http.StatusOK, gin.H{"channel": name, "capabilities": list})
}

// decodeJSON reads a JSON object body into v, answering 400/413 itself.
func decodeJSON(c *gin.Context, v any) bool {
	body, ok := readBody(c, maxBodyBytes)
	if !ok {
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		rest.WriteError(c, http.StatusBadRequest, "The body is not the JSON object this route takes: "+err.Error())
		return false
	}
	return true
}

// opResult answers a governance proposal's result; it reports whether it was OK.
func (s *Service) opResult(c *gin.Context, cmd fsm.Command) bool {
	res, err := s.propose(c.Request.Context(), cmd)
	if err != nil {
		rest.WriteError(c, http.StatusServiceUnavailable, "The server could not record this now; try again")
		return false
	}
	switch res.Code {
	case fsm.OK:
		return true
	case fsm.ErrChanOpNeeded:
		rest.WriteError(c, http.StatusForbidden, "Only the channel's operators may do this")
	case fsm.ErrNoSuchChannel:
		rest.WriteError(c, http.StatusNotFound, "No such channel")
	case fsm.ErrNotOnChannel:
		rest.WriteError(c, http.StatusForbidden, "Only a member of the channel may ask for approval there")
	case fsmcoord.ErrCoordNotFound:
		rest.WriteError(c, http.StatusNotFound, "No such grant or approval in this channel")
	case fsmcoord.ErrApprovalResolved:
		rest.WriteError(c, http.StatusConflict, "The approval is already resolved")
	case fsmcoord.ErrActImmutableEvent:
		rest.WriteError(c, http.StatusConflict, "That id is already in use")
	case fsmcoord.ErrCoordFull:
		rest.WriteError(c, http.StatusInsufficientStorage, "The channel holds its maximum number of entries")
	default:
		rest.WriteError(c, http.StatusBadRequest, "Refused: "+res.Code.String())
	}
	return false
}

// grantBody is the body of POST /channels/{name}/agent-capabilities.
type grantBody struct {
	AgentDID         string `json:"agent_did"`
	Capability       string `json:"capability"`
	Scope            string `json:"scope"`
	TTLSeconds       int64  `json:"ttl_seconds"`
	RequiresApproval bool   `json:"requires_approval"`
	RateLimit        string `json:"rate_limit"`
}

func (s *Service) grantCapability(c *gin.Context) {
	name, ok := s.withChannel(c)
	if !ok {
		return
	}
	var b grantBody
	if !decodeJSON(c, &b) {
		return
	}
	if _, err := keyresolver.ValidateDID(b.AgentDID); err != nil {
		rest.WriteError(c, http.StatusBadRequest, "agent_did: "+err.Error())
		return
	}
	if err := checkCapabilities("capability", []string{b.Capability}); err != nil || b.TTLSeconds < 0 ||
		b.TTLSeconds > 365*86400 || len(b.Scope) > 256 || len(b.RateLimit) > 64 {
		rest.WriteError(c, http.StatusBadRequest, "capability is required (no spaces, at most 128 bytes); ttl_seconds 0 to 31536000; scope ≤ 256 bytes; rate_limit ≤ 64 bytes")
		return
	}
	g := fsmcoord.CapabilityGrant{ID: s.newID(), AgentDID: b.AgentDID, Capability: b.Capability, Scope: b.Scope,
		TTLSeconds: b.TTLSeconds, RequiresApproval: b.RequiresApproval, RateLimit: b.RateLimit}
	if !s.opResult(c, fsmcoord.GrantCapability{Channel: name, ByDID: rest.DID(c), Grant: g}) {
		return
	}
	var out fsmcoord.CapabilityGrant
	s.read(func(st *fsm.State) {
		for _, x := range fsmcoord.Of(st).Capabilities(name, 0) {
			if x.ID == g.ID {
				out = x
			}
		}
	})
	out.GrantedAt /= 1000
	out.ExpiresAt /= 1000
	c.PureJSON(http.StatusCreated, out)
}

func (s *Service) newID() string {
	if s.cfg.NewID != nil {
		return s.cfg.NewID()
	}
	return strconv.FormatInt(s.cfg.Now().UnixNano(), 36)
}

func (s *Service) revokeCapability(c *gin.Context) {
	name, ok := s.withChannel(c)
	if !ok {
		return
	}
	if s.opResult(c, fsmcoord.RevokeCapability{Channel: name, ByDID: rest.DID(c), ID: c.Param("id")}) {
		c.PureJSON(http.StatusOK, gin.H{"ok": true})
	}
}

func (s *Service) listApprovals(c *gin.Context) {
	name, ok := s.withChannel(c)
	if !ok {
		return
	}
	var list []fsmcoord.Approval
	s.read(func(st *fsm.State) { list = fsmcoord.Of(st).Approvals(name) })
	for i := range list {
		list[i].RequestedAt /= 1000
		list[i].ResolvedAt /= 1000
	}
	c.PureJSON(http.StatusOK, gin.H{"channel": name, "approvals": list})
}

// approvalBody is the body of POST /channels/{name}/approvals.
type approvalBody struct {
	Capability string `json:"capability"`
	Details    string `json:"details"`
}

func (s *Service) requestApproval(c *gin.Context) {
	name, ok := s.withChannel(c)
	if !ok {
		return
	}
	var b approvalBody
	if !decodeJSON(c, &b) {
		return
	}
	if err := checkCapabilities("capability", []string{b.Capability}); err != nil || len(b.Details) > fsmcoord.MaxCoordValue {
		rest.WriteError(c, http.StatusBadRequest, "capability is required (no spaces, at most 128 bytes); details at most 4096 bytes")
		return
	}
	ap := fsmcoord.Approval{ID: s.newID(), AgentDID: rest.DID(c), Capability: b.Capability, Details: b.Details}
	if !s.opResult(c, fsmcoord.RequestApproval{Channel: name, Approval: ap}) {
		return
	}
	s.answerApproval(c, name, ap.ID, http.StatusCreated)
}

func (s *Service) answerApproval(c *gin.Context, channel, id string, status int) {
	var out fsmcoord.Approval
	s.read(func(st *fsm.State) {
		for _, x := range fsmcoord.Of(st).Approvals(channel) {
			if x.ID == id {
				out = x
			}
		}
	})
	out.RequestedAt /= 1000
	out.ResolvedAt /= 1000
	c.PureJSON(status, out)
}

func (s *Service) resolveApproval(c *gin.Context) {
	name, ok := s.withChannel(c)
	if !ok {
		return
	}
	var b struct {
		Approve *bool `json:"approve"`
	}
	if !decodeJSON(c, &b) {
		return
	}
	if b.Approve == nil {
		rest.WriteError(c, http.StatusBadRequest, `The body is {"approve": true|false}`)
		return
	}
	if s.opResult(c, fsmcoord.ResolveApproval{Channel: name, ByDID: rest.DID(c), ID: c.Param("id"), Approve: *b.Approve}) {
		s.answerApproval(c, name, c.Param("id"), http.StatusOK)
	}
}

// TimelineItem is one audit timeline entry.
type TimelineItem struct {
	Timestamp int64             `json:"timestamp"`
	Category  string            `json:"category"`
	Event     string            `json:"event"`
	ActorDID  string            `json:"actor_did"`
	RefID     *string           `json:"ref_id"`
	Details   map[string]string `json:"details"`
	Signature *string           `json:"signature"`
	EventID   *string           `json:"event_id"`
}

// parseSince reads since: unix seconds or RFC 3339; "" is no bound.
func parseSince(raw string) (int64, error) {
	if raw == "" {
		return 0, nil
	}
	if n, err := strconv.ParseInt(raw, 10, 64); err == nil && n >= 0 {
		return n, nil
	}
	t, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return 0, errors.New("since is unix seconds or an RFC 3339 time")
	}
	return t.Unix(), nil
}

// CoordEvent is one coordination event as GET /channels/{name}/events lists it (freeq's shape):
// a typed event's payload as a JSON value, an act event's fields as an object.
type CoordEvent struct {
	EventID   string          `json:"event_id"`
	EventType string          `json:"event_type"`
	ActorDID  string          `json:"actor_did"`
	Channel   string          `json:"channel"`
	RefID     *string         `json:"ref_id"`
	Payload   json.RawMessage `json:"payload"`
	Signature *string         `json:"signature"`
	Timestamp int64           `json:"timestamp"`
}

func coordEventOf(channel string, it fsmcoord.TimelineItem) CoordEvent {
	var payload json.RawMessage
	if strings.HasPrefix(it.Event, "act:") {
		payload, _ = json.Marshal(it.Details)
		if it.Details == nil {
			payload = json.RawMessage(`{}`)
		}
	} else {
		payload = payloadJSON(it.Details["payload"])
	}
	return CoordEvent{EventID: it.EventID, EventType: it.Event, ActorDID: it.ActorDID, Channel: channel, RefID: optional(it.RefID),
		Payload: payload, Signature: optional(it.Signature), Timestamp: it.Timestamp / 1000}
}

// timeline serves GET /channels/{name}/events (the coordination events; filters type, ref_id,
// actor, since, limit) and, with audit, /audit (every timeline item; filters actor, since, limit).
func (s *Service) timeline(audit bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		name, ok := s.withChannel(c)
		if !ok {
			return
		}
		limit, ok := rest.LimitParam(c, defaultTimelineLimit, maxLimit)
		if !ok {
			return
		}
		since, err := parseSince(c.Query("since"))
		if err != nil {
			rest.WriteError(c, http.StatusBadRequest, err.Error())
			return
		}
		typ, ref, actor := c.Query("type"), c.Query("ref_id"), c.Query("actor")
		if audit {
			typ, ref = "", ""
		}
		var items []fsmcoord.TimelineItem
		s.read(func(st *fsm.State) {
			items = fsmcoord.Of(st).Timeline(name, func(it *fsmcoord.TimelineItem) bool {
				return (audit || it.Category == fsmcoord.CategoryCoordination) &&
					(typ == "" || it.Event == typ || strings.TrimPrefix(it.Event, "act:") == typ) &&
					(ref == "" || it.RefID == ref) && (actor == "" || it.ActorDID == actor) && it.Timestamp/1000 >= since
			}, limit)
		})
		if !audit {
			out := make([]CoordEvent, len(items))
			for i, it := range items {
				out[i] = coordEventOf(name, it)
			}
			c.PureJSON(http.StatusOK, gin.H{"channel": name, "events": out})
			return
		}
		out := make([]TimelineItem, len(items))
		for i, it := range items {
			d := it.Details
			if d == nil {
				d = map[string]string{}
			}
			out[i] = TimelineItem{Timestamp: it.Timestamp / 1000, Category: it.Category, Event: it.Event, ActorDID: it.ActorDID,
				RefID: optional(it.RefID), Details: d, Signature: optional(it.Signature), EventID: optional(it.EventID)}
		}
		c.PureJSON(http.StatusOK, gin.H{"channel": name, "entries": out})
	}
}

// Heartbeat is the heartbeat an actor record shows, with its health at read time.
type Heartbeat struct {
	State          string `json:"state,omitempty"`
	LastSeen       int64  `json:"last_seen"`
	TTLSeconds     int64  `json:"ttl_seconds"`
	Healthy        bool   `json:"healthy"`
	ElapsedSeconds int64  `json:"elapsed_seconds"`
}

// actorDetails adds the coordination fields to /api/v1/actors/{did}.
func (s *Service) actorDetails(did string) (map[string]any, bool) {
	var (
		rec           fsmcoord.ActorRecord
		known, online bool
		spawn         fsmcoord.SpawnedAgent
		spawned       bool
	)
	s.read(func(st *fsm.State) {
		rec, known = fsmcoord.Of(st).Actor(did)
		spawn, spawned = fsmcoord.Of(st).Spawn(did)
		online = len(st.SessionsByDID(did)) > 0
	})
	class := "human"
	if known && rec.Class != "" {
		class = rec.Class
	}
	out := map[string]any{"actor_class": class}
	if !known && !spawned {
		return out, false
	}
	if p := rec.Provenance; p != nil {
		var doc any
		if json.Unmarshal([]byte(p.Certificate), &doc) != nil {
			doc = nil
		}
		out["provenance"] = map[string]any{"verified": p.Verified, "principal": optional(p.Principal), "reason": p.Reason,
			"declaration": doc, "expires": optional(p.Expires), "recorded_at": p.RecordedAt / 1000}
		if p.Verified {
			out["delegation"] = map[string]any{"type": DelegationType, "principal": p.Principal}
		}
	}
	if p := rec.Presence; p != nil {
		out["presence"] = map[string]any{"state": p.State, "status": optional(p.Status), "updated_at": p.UpdatedAt / 1000}
	}
	if h := rec.Heartbeat; h != nil {
		elapsed := max(0, s.cfg.Now().UnixMilli()-h.LastSeen) / 1000
		out["heartbeat"] = Heartbeat{State: h.State, LastSeen: h.LastSeen / 1000, TTLSeconds: h.TTL,
			Healthy: online && elapsed <= h.TTL, ElapsedSeconds: elapsed}
	}
	if spawned {
		out["spawned"] = true
		out["parent_did"], out["parent_nick"], out["channel"] = spawn.ParentDID, spawn.ParentNick, spawn.Channel
		out["capabilities"], out["ttl"], out["task"], out["spawned_at"] = spawn.Capabilities, spawn.TTL, spawn.TaskRef, spawn.SpawnedAt/1000
	}
	return out, true
}
