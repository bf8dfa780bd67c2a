package av

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/raft/fsm"
	fsmav "github.com/palaver-chat/palaver/raft/fsm/av"
	"github.com/palaver-chat/palaver/sfu"
)

//go:embed openapi.yaml
var contractFragment []byte

// State is the replicated state the routes read.
type State interface{ Read(func(*fsm.State)) }

// Proposer proposes commands through Raft and returns once this node applied them.
type Proposer interface {
	Propose(ctx context.Context, cmd fsm.Command) (fsm.Result, error)
}

// Limits of the surface.
const (
	// MaxSignalBytes bounds one signalling message (an SDP of a large call fits).
	MaxSignalBytes = 256 << 10
	// sendQueue bounds the signals waiting for a slow client; past it the client is dropped.
	sendQueue = 256
	// writeTimeout bounds one WebSocket write.
	writeTimeout = 10 * time.Second
	// EmptyCallTimeout ends a call nobody has joined, or that everyone's connection left.
	EmptyCallTimeout = time.Minute
	// maxRecent bounds the ended calls a listing returns.
	maxRecent = 50
)

// Config configures the surface.
type Config struct {
	Node    string // this node's name (the host of the calls it starts)
	BaseURL string // this node's public base URL
	State   State
	Propose Proposer
	Keys    Keys
	// SFU is the forwarding unit; nil when calls are off or it failed to start: the routes that
	// need it (start, signalling) answer 503 then and starting a call over IRC is refused
	// (Unavailable says why); the roster's routes still serve.
	SFU         *sfu.SFU
	Unavailable string
	// HostURL gives the public base URL of a cluster node by name.
	HostURL func(node string) (string, bool)
	// Announce sends a server TAGMSG with tags to the channel's members on this node that
	// have message-tags.
	Announce   func(channel string, tags map[string]string, at time.Time, msgid string)
	ServerName string
	// OperDIDs are the server operators' DIDs (--oper-did): they end any call.
	OperDIDs []string
	// Tell sends a server NOTICE with tags to the sessions of did on this node: the answer to a
	// call action from IRC that Raft refused after the action was accepted.
	Tell   func(did, text string, tags map[string]string)
	Logger *slog.Logger
	Now    func() time.Time
}

// Gateway is the call surface of one node.
type Gateway struct {
	cfg  Config
	log  *slog.Logger
	rest *rest.Server

	ctx    context.Context // ends at Close: every signalling session ends with it
	cancel context.CancelFunc
	tasks  chan func(context.Context)

	mu     sync.Mutex // lock tier 9: guards closed against wg.Add after Close
	closed bool
	wg     sync.WaitGroup
}

// track counts one more goroutine Close waits for; false once Close started.
func (g *Gateway) track() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	return true
}

// New builds the surface; its background work (proposals, the sweep of empty calls) runs until
// Close.
func New(cfg Config) *Gateway {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	g := &Gateway{cfg: cfg, log: cfg.Logger, tasks: make(chan func(context.Context), 1024)}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	g.wg.Add(1)
	go g.work()
	if cfg.SFU != nil {
		g.wg.Add(1)
		go g.sweep()
	}
	return g
}

// Running reports whether calls can be made here (the forwarding unit started).
func (g *Gateway) Running() bool { return g.cfg.SFU != nil }

// Close ends the signalling sessions and the background work.
func (g *Gateway) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.cancel()
	g.wg.Wait()
}

// Mount adds the routes to the REST server and describes them in its contract document.
func (g *Gateway) Mount(r *rest.Server) error {
	g.rest = r
	e := r.Engine()
	limited := r.RateLimit(rest.RecordRoutes)
	// The roster is replicated: a node whose own forwarding unit is not running still lists and
	// shows calls, ends them, files artifacts and gives tokens for calls other nodes host. Only
	// starting a call (hosted here) and the signalling socket need this node's unit.
	e.GET("/api/v1/sessions", r.OptionalBearer(), g.listSessions)
	e.POST("/api/v1/sessions", g.available, r.RequireBearer(), limited, g.startSession)
	e.GET("/api/v1/sessions/:id", r.OptionalBearer(), g.getSession)
	e.POST("/api/v1/sessions/:id/end", r.RequireBearer(), limited, g.endSession)
	e.GET("/api/v1/sessions/:id/artifacts", r.OptionalBearer(), g.listArtifacts)
	e.POST("/api/v1/sessions/:id/artifacts", r.RequireBearer(), limited, g.addArtifact)
	e.GET("/api/v1/channels/:name/sessions", r.OptionalBearer(), g.channelSessions)
	e.GET("/api/v1/av/sessions/:id/token", r.RequireBearer(), limited, g.token)
	e.GET("/api/v1/av/sessions/:id/ws", g.available, g.serveSignal)
	if err := r.DescribeRoutes(contractFragment); err != nil {
		return fmt.Errorf("av routes: %w", err)
	}
	return nil
}

// available answers 503 on the routes that need this node's forwarding unit while it is not
// running.
func (g *Gateway) available(c *gin.Context) {
	if g.cfg.SFU == nil {
		rest.WriteError(c, http.StatusServiceUnavailable, "Audio and video are not available on this node: "+g.unavailable())
		c.Abort()
	}
}

// Unavailable says why this node's forwarding unit is not running; "" when it runs.
func (g *Gateway) Unavailable() string {
	if g.cfg.SFU != nil {
		return ""
	}
	return g.unavailable()
}

// unavailable says why this node's forwarding unit is not running.
func (g *Gateway) unavailable() string {
	if g.cfg.Unavailable != "" {
		return g.cfg.Unavailable
	}
	return "calls are switched off here (--no-av)"
}

// Session is a call as the routes show it.
type Session struct {
	ID               string        `json:"id"`
	Channel          string        `json:"channel"`
	State            string        `json:"state"` // Active | Ended
	HostNode         string        `json:"host_node"`
	CreatedBy        string        `json:"created_by"`
	CreatedByNick    string        `json:"created_by_nick"`
	CreatedAt        int64         `json:"created_at"` // unix seconds
	EndedAt          *int64        `json:"ended_at"`
	EndedBy          *string       `json:"ended_by"`
	EndReason        *string       `json:"end_reason"`
	ParticipantCount int           `json:"participant_count"` // in the call now
	Participants     []Participant `json:"participants"`
	Artifacts        []Artifact    `json:"artifacts"` // in order of addition
}

// Participant is one account in a call's roster.
type Participant struct {
	DID      string `json:"did"`
	Nick     string `json:"nick"`
	JoinedAt int64  `json:"joined_at"`
	LeftAt   *int64 `json:"left_at"`
	Reason   string `json:"reason,omitempty"`
}

// Artifact is something a member attached to a call: a recording, a transcript, a summary,
// notes or a link.
type Artifact struct {
	ID          string `json:"id"`
	Kind        string `json:"kind"`
	URL         string `json:"url"`
	Title       string `json:"title"`
	AddedBy     string `json:"added_by"`
	AddedByNick string `json:"added_by_nick"`
	CreatedAt   int64  `json:"created_at"` // unix seconds
}

// Artifacts is the answer of GET /api/v1/sessions/{id}/artifacts.
type Artifacts struct {
	SessionID string     `json:"session_id"`
	Artifacts []Artifact `json:"artifacts"`
}

func artifactsOf(c fsmav.AVCall) []Artifact {
	out := make([]Artifact, 0, len(c.Artifacts))
	for _, a := range c.Artifacts {
		out = append(out, Artifact{ID: a.ID, Kind: a.Kind, URL: a.URL, Title: a.Title, AddedBy: a.AddedBy,
			AddedByNick: a.AddedNick, CreatedAt: a.AddedAt / 1000})
	}
	return out
}

func sessionOf(c fsmav.AVCall) Session {
	s := Session{ID: c.ID, Channel: c.Channel, State: "Active", HostNode: c.Host, CreatedBy: c.CreatedBy,
		CreatedByNick: c.CreatedByNick, CreatedAt: c.CreatedAt / 1000, ParticipantCount: c.LiveParticipants(),
		Participants: make([]Participant, 0, len(c.Participants)), Artifacts: artifactsOf(c)}
	if !c.Live() {
		s.State = "Ended"
		at := c.EndedAt / 1000
		s.EndedAt = &at
		if c.EndedBy != "" {
			s.EndedBy = &c.EndedBy
		}
		if c.EndReason != "" {
			s.EndReason = &c.EndReason
		}
	}
	for _, p := range c.Participants {
		out := Participant{DID: p.DID, Nick: p.Nick, JoinedAt: p.JoinedAt / 1000, Reason: p.Reason}
		if p.LeftAt != 0 {
			at := p.LeftAt / 1000
			out.LeftAt = &at
		}
		s.Participants = append(s.Participants, out)
	}
	return s
}

// Sessions is the answer of the listings: the live calls and the recently ended ones.
type Sessions struct {
	Active []Session `json:"active"`
	Recent []Session `json:"recent"`
}

// ChannelSessions is a channel's live call (or null) and its recently ended calls.
type ChannelSessions struct {
	Channel string    `json:"channel"`
	Active  *Session  `json:"active"`
	Recent  []Session `json:"recent"`
}

func (g *Gateway) listSessions(c *gin.Context) {
	did := rest.DID(c)
	out := Sessions{Active: []Session{}, Recent: []Session{}}
	g.cfg.State.Read(func(st *fsm.State) {
		readable := func(channel string) bool { _, may := fsmav.Of(st).MayRead(channel, did); return may }
		for _, call := range fsmav.Of(st).Live() {
			if readable(call.Channel) {
				out.Active = append(out.Active, sessionOf(call))
			}
		}
		for _, call := range fsmav.Of(st).Recent("", fsmav.MaxRecentAVCalls) {
			if len(out.Recent) < maxRecent && readable(call.Channel) {
				out.Recent = append(out.Recent, sessionOf(call))
			}
		}
	})
	c.PureJSON(http.StatusOK, out)
}

func (g *Gateway) getSession(c *gin.Context) {
	if call, ok := g.readableCall(c); ok {
		c.PureJSON(http.StatusOK, sessionOf(call))
	}
}

// readableCall finds the call of the path for the reader of the request; it answers 404 or 403
// and false when there is none or the reader may not see it.
func (g *Gateway) readableCall(c *gin.Context) (fsmav.AVCall, bool) {
	id := c.Param("id")
	var call fsmav.AVCall
	var found, may bool
	g.cfg.State.Read(func(st *fsm.State) {
		if call, found = fsmav.Of(st).Call(id); found {
			_, may = fsmav.Of(st).MayRead(call.Channel, rest.DID(c))
		}
	})
	switch {
	case !found:
		rest.WriteError(c, http.StatusNotFound, "No call "+id+" (ended calls are kept for a while only)")
	case !may:
		rest.WriteError(c, http.StatusForbidden, "The call's channel "+call.Channel+" is restricted: it is visible to its members")
	default:
		return call, true
	}
	return fsmav.AVCall{}, false
}

func (g *Gateway) listArtifacts(c *gin.Context) {
	if call, ok := g.readableCall(c); ok {
		c.PureJSON(http.StatusOK, Artifacts{SessionID: call.ID, Artifacts: artifactsOf(call)})
	}
}

// ArtifactRequest is the body of POST /api/v1/sessions/{id}/artifacts.
type ArtifactRequest struct {
	Kind  string `json:"kind"`
	URL   string `json:"url"`
	Title string `json:"title"`
}

// maxArtifactBody bounds the body of an artifact: the URL and title at their limits, escaped.
const maxArtifactBody = 16 << 10

func (g *Gateway) addArtifact(c *gin.Context) {
	var req ArtifactRequest
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxArtifactBody))
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		rest.WriteError(c, http.StatusBadRequest, `The body must be JSON {"kind", "url", "title"} of at most 16 KiB`)
		return
	}
	if why := fsmav.ValidAVArtifact(req.Kind, req.URL, req.Title); why != "" {
		rest.WriteError(c, http.StatusBadRequest, "Not a valid artifact: "+why)
		return
	}
	if u, err := url.Parse(req.URL); err != nil || u.Host == "" {
		rest.WriteError(c, http.StatusBadRequest, "Not a valid artifact: url must be an http or https URL with a host")
		return
	}
	id := c.Param("id")
	var call fsmav.AVCall
	var found bool
	g.cfg.State.Read(func(st *fsm.State) { call, found = fsmav.Of(st).Call(id) })
	if !found {
		rest.WriteError(c, http.StatusNotFound, "No call "+id+" (ended calls are kept for a while only)")
		return
	}
	artifactID := ulid.Make().String()
	res, err := g.cfg.Propose.Propose(c.Request.Context(), fsmav.AVAddArtifact{CallID: id, ArtifactID: artifactID,
		DID: rest.DID(c), Kind: req.Kind, URL: req.URL, Title: req.Title})
	if err != nil {
		g.log.Warn("adding a call artifact", "call", id, "err", err)
		rest.WriteError(c, http.StatusServiceUnavailable, "The artifact could not be added now; try again")
		return
	}
	switch res.Code {
	case fsm.OK:
	case fsmav.ErrAVArtifactsFull:
		rest.WriteError(c, http.StatusConflict, fmt.Sprintf("The call already has %d artifacts, the most it keeps", fsmav.MaxAVArtifacts))
		return
	case fsmav.ErrAVNoCall:
		rest.WriteError(c, http.StatusNotFound, "No call "+id+" (ended calls are kept for a while only)")
		return
	case fsm.ErrNoSuchChannel, fsm.ErrNotOnChannel:
		rest.WriteError(c, http.StatusForbidden, "Only members of "+call.Channel+" add artifacts to its calls: join it over IRC first")
		return
	default:
		status, msg := refusal(res.Code, call.Channel)
		rest.WriteError(c, status, msg)
		return
	}
	g.cfg.State.Read(func(st *fsm.State) { call, _ = fsmav.Of(st).Call(id) })
	for _, a := range artifactsOf(call) {
		if a.ID == artifactID {
			c.PureJSON(http.StatusCreated, a)
			return
		}
	}
	rest.WriteError(c, http.StatusNotFound, "No call "+id+" (ended calls are kept for a while only)")
}

// channelName folds and checks a channel name from the path.
func channelName(c *gin.Context, raw string) (string, bool) {
	name := fsm.Fold(raw)
	if name != "" && name[0] != '#' && name[0] != '&' {
		name = "#" + name
	}
	if len(name) < 2 || len(name) > fsm.MaxChannelLen || name[0] != '#' && name[0] != '&' {
		rest.WriteError(c, http.StatusBadRequest, fmt.Sprintf("%q is not a channel name (#name or &name, at most %d characters)", raw, fsm.MaxChannelLen))
		return "", false
	}
	return name, true
}

func (g *Gateway) channelSessions(c *gin.Context) {
	name, ok := channelName(c, c.Param("name"))
	if !ok {
		return
	}
	out := ChannelSessions{Channel: name, Recent: []Session{}}
	var exists, may bool
	g.cfg.State.Read(func(st *fsm.State) {
		if exists, may = fsmav.Of(st).MayRead(name, rest.DID(c)); !may {
			return
		}
		if call, ok := fsmav.Of(st).Active(name); ok {
			s := sessionOf(call)
			out.Active = &s
		}
		for _, call := range fsmav.Of(st).Recent(name, maxRecent) {
			out.Recent = append(out.Recent, sessionOf(call))
		}
	})
	switch {
	case !exists:
		rest.WriteError(c, http.StatusNotFound, "No channel "+name)
	case !may:
		rest.WriteError(c, http.StatusForbidden, "The channel "+name+" is restricted: its calls are visible to its members")
	default:
		c.PureJSON(http.StatusOK, out)
	}
}

// StartRequest is the body of POST /api/v1/sessions.
type StartRequest struct {
	Channel string `json:"channel"`
}

func (g *Gateway) startSession(c *gin.Context) {
	var req StartRequest
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, 4096))
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		rest.WriteError(c, http.StatusBadRequest, `The body must be JSON {"channel":"#name"} of at most 4096 bytes`)
		return
	}
	name, ok := channelName(c, req.Channel)
	if !ok {
		return
	}
	id := ulid.Make().String()
	res, err := g.cfg.Propose.Propose(c.Request.Context(), fsmav.AVStart{CallID: id, Channel: name, Node: g.cfg.Node, DID: rest.DID(c)})
	if err != nil {
		g.log.Warn("starting a call", "channel", name, "err", err)
		rest.WriteError(c, http.StatusServiceUnavailable, "The call could not be started now; try again")
		return
	}
	if res.Code != fsm.OK {
		status, msg := refusal(res.Code, name)
		if res.Code == fsmav.ErrAVActive {
			g.cfg.State.Read(func(st *fsm.State) {
				if call, ok := fsmav.Of(st).Active(name); ok {
					msg = name + " already has a call: " + call.ID + "; join it"
				}
			})
		}
		rest.WriteError(c, status, msg)
		return
	}
	var call fsmav.AVCall
	g.cfg.State.Read(func(st *fsm.State) { call, _ = fsmav.Of(st).Call(id) })
	c.PureJSON(http.StatusCreated, sessionOf(call))
}

// refusal maps a refused call command to an HTTP status and a message.
func refusal(code fsm.Code, channel string) (int, string) {
	switch code {
	case fsmav.ErrAVActive:
		return http.StatusConflict, channel + " already has a call"
	case fsm.ErrNoSuchChannel:
		return http.StatusNotFound, "No channel " + channel
	case fsm.ErrNotOnChannel:
		return http.StatusForbidden, "Only members of " + channel + " take part in its calls: join it over IRC first"
	case fsm.ErrBanned:
		return http.StatusForbidden, "You are banned from " + channel
	case fsmav.ErrAVNeedsAccount:
		return http.StatusForbidden, "Only authenticated users take part in calls"
	case fsmav.ErrAVNoCall:
		return http.StatusNotFound, "The call has ended"
	case fsmav.ErrAVFull:
		return http.StatusForbidden, fmt.Sprintf("The call is full (%d participants)", fsmav.MaxAVParticipants)
	case fsmav.ErrAVNotOperator:
		return http.StatusForbidden, "Only channel operators of " + channel + " and server operators end its calls"
	default:
		return http.StatusBadRequest, "Refused: " + code.String()
	}
}

// TokenResponse is the answer of the token route: where to connect and with what.
type TokenResponse struct {
	Token        string `json:"token"`
	SessionID    string `json:"session_id"`
	Channel      string `json:"channel"`
	ExpiresAt    int64  `json:"expires_at"` // unix seconds
	SignalingURL string `json:"signaling_url"`
	HostNode     string `json:"host_node"`
}

func (g *Gateway) token(c *gin.Context) {
	id, did := c.Param("id"), rest.DID(c)
	var call fsmav.AVCall
	var found bool
	code := fsm.OK
	g.cfg.State.Read(func(st *fsm.State) {
		if call, found = fsmav.Of(st).Call(id); found {
			code = fsmav.Of(st).Eligible(call.Channel, did)
		}
	})
	switch {
	case !found:
		rest.WriteError(c, http.StatusNotFound, "No call "+id)
		return
	case !call.Live():
		rest.WriteError(c, http.StatusNotFound, "The call "+id+" has ended")
		return
	case code != fsm.OK:
		status, msg := refusal(code, call.Channel)
		rest.WriteError(c, status, msg)
		return
	}
	base := g.cfg.BaseURL
	if call.Host == g.cfg.Node && g.cfg.SFU == nil {
		rest.WriteError(c, http.StatusServiceUnavailable, "Audio and video are not available on this node: "+g.unavailable())
		return
	}
	if call.Host != g.cfg.Node {
		var ok bool
		if g.cfg.HostURL == nil {
			ok = false
		} else {
			base, ok = g.cfg.HostURL(call.Host)
		}
		if !ok {
			rest.WriteError(c, http.StatusServiceUnavailable, "The node hosting this call ("+call.Host+") cannot be reached now")
			return
		}
	}
	tok, cl, err := mintToken(g.cfg.Keys, call.ID, call.Channel, did, g.cfg.Now())
	if err != nil {
		rest.WriteError(c, http.StatusInternalServerError, "No token could be made")
		return
	}
	c.PureJSON(http.StatusOK, TokenResponse{Token: tok, SessionID: call.ID, Channel: call.Channel, ExpiresAt: cl.Exp,
		SignalingURL: wsURL(base) + "/api/v1/av/sessions/" + url.PathEscape(call.ID) + "/ws?token=" + url.QueryEscape(tok),
		HostNode:     call.Host})
}

// wsURL turns an http(s) base URL into a ws(s) one.
func wsURL(base string) string {
	base = strings.TrimRight(base, "/")
	switch {
	case strings.HasPrefix(base, "https://"):
		return "wss://" + strings.TrimPrefix(base, "https://")
	case strings.HasPrefix(base, "http://"):
		return "ws://" + strings.TrimPrefix(base, "http://")
	}
	return base
}

// enqueue runs f on the background worker; when its queue is full f is dropped with a warning
// (the forwarding unit already acted: only the roster update is lost, and the sweep of empty
// calls or the next change repairs it).
func (g *Gateway) enqueue(what string, f func(context.Context)) {
	select {
	case g.tasks <- f:
	default:
		g.log.Warn("call task queue full: dropped", "task", what)
	}
}

func (g *Gateway) work() {
	defer g.wg.Done()
	for {
		select {
		case <-g.ctx.Done():
			return
		case f := <-g.tasks:
			f(g.ctx)
		}
	}
}

// propose proposes cmd on the worker and logs a failure.
func (g *Gateway) propose(cmd fsm.Command) {
	g.enqueue(fmt.Sprintf("%T", cmd), func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if _, err := g.cfg.Propose.Propose(ctx, cmd); err != nil && !errors.Is(err, context.Canceled) {
			g.log.Warn("call update", "cmd", fmt.Sprintf("%T", cmd), "err", err)
		}
	})
}

// sweep ends the calls hosted here that have had nobody in them for EmptyCallTimeout.
func (g *Gateway) sweep() {
	defer g.wg.Done()
	tick := time.NewTicker(EmptyCallTimeout / 4)
	defer tick.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-tick.C:
		}
		cutoff := g.cfg.Now().Add(-EmptyCallTimeout).UnixMilli()
		var idle []string
		g.cfg.State.Read(func(st *fsm.State) {
			for _, call := range fsmav.Of(st).Live() {
				if call.Host == g.cfg.Node && call.LiveParticipants() == 0 && lastActivity(call) < cutoff {
					idle = append(idle, call.ID)
				}
			}
		})
		for _, id := range idle {
			g.propose(fsmav.AVEnd{CallID: id, Reason: "nobody is in the call"})
		}
	}
}

// lastActivity is when the call started or someone last joined or left (unix ms).
func lastActivity(c fsmav.AVCall) int64 {
	at := c.CreatedAt
	for _, p := range c.Participants {
		at = max(at, p.JoinedAt, p.LeftAt)
	}
	return at
}
