package assist

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/stream"
	"github.com/palaver-chat/palaver/raft/fsm"
)

//go:embed openapi.yaml
var contractFragment []byte

// Paths.
const (
	ToolsPath   = "/agent/tools/"
	SessionPath = "/agent/session"
)

// MaxBodyBytes caps a tool's or /agent/session's request body.
const MaxBodyBytes = 64 << 10

// DefaultLimit is the per-client-address limit on tool calls (a /agent/session request counts
// once, whatever tools it runs).
var DefaultLimit = rest.RateLimit{Requests: 60, Window: time.Minute}

// State is the node's replica of the replicated state (*fsm.Machine is one).
type State interface {
	Read(func(*fsm.State))
}

// Store is the part of the event store the tools read (*eventstore.Store is one).
type Store interface {
	Get(ctx context.Context, msgid string) (eventstore.Message, error)
	// ResumeAfter is what a reader who read msgid has not: the messages stored after it and those
	// stored before it that reached readers later (eventstore's resume rule).
	ResumeAfter(ctx context.Context, venue, msgid string, limit int) ([]eventstore.Message, error)
	Visible(m eventstore.Message) bool
}

// SendChecker runs the message path's send rules for a channel message without sending it.
type SendChecker interface {
	CheckSend(r SendRequest) SendVerdict
}

// SendRequest is a message a session would send to a channel.
type SendRequest struct {
	Session, DID string
	Oper         bool   // the session is a server operator
	Channel      string // folded
	Command      string // PRIVMSG, NOTICE or TAGMSG
	Text         string
	Tags         map[string]string // client-only tags
	// OwnSignature says the message would carry the sender's own valid signature.
	OwnSignature bool
}

// SendVerdict is the outcome the message path would give.
type SendVerdict struct {
	// Numeric (403, 404, 442) or Code (a FAIL code: RATE_LIMITED, SIGNATURE_REQUIRED) of a
	// refusal, and its Text; all "" when the message would be accepted.
	Numeric, Code, Text string
	// FloodKnown is true when the session is connected to this node, whose flood bucket is then
	// read: FloodLimited is false when the node has no flood limits, Tokens the messages left.
	FloodKnown, FloodLimited bool
	Tokens                   float64
}

// SyncSource reports this node's replication counters.
type SyncSource interface {
	SyncFacts(ctx context.Context) SyncFacts
}

// SyncFacts are the Raft and exchange counters of this node.
type SyncFacts struct {
	Node, Role, Leader             string
	Term, Applied, Commit, LastLog uint64
	Voters, NonVoters              int
	Members                        []SyncMember
	Cursors                        []SyncCursor
	FederationPeers                []string
	CursorError                    string // why cursors could not be read ("" when they were)
}

// SyncMember is one cluster member as this node sees it.
type SyncMember struct {
	Node, State, Suffrage string
	Leader, Self          bool
}

// SyncCursor is how far this node has copied another node's events: the last origin seq of
// messages, deletes and reactions stored here, and the pushed events queued for that node.
type SyncCursor struct {
	Origin                       string
	Messages, Deletes, Reactions int64
	Queued                       int
	// Stream: a healthy stream from the node carries its logs; Behind: none does and the latest
	// pull failed (PullError); DeadLetters: its items this node refused and passed over.
	Stream      bool
	Behind      bool
	PullError   string
	DeadLetters int64
}

// AppliedStream is the stream of applied Raft entries (*stream.Applied is one).
type AppliedStream interface {
	Subscribe(name string, mode stream.Mode, fn func(stream.Entry)) error
}

// AVInspector reports the media forwarding unit's state of a channel's call.
type AVInspector interface {
	// InspectAV returns the facts of the call in a (folded) channel; active is false when there is
	// none, with the reason.
	InspectAV(ctx context.Context, channel string) (report AVReport, active bool, reason string)
}

// AVReport is the roster of one call (replicated) compared with its wire state (the forwarding
// unit of the hosting node).
type AVReport struct {
	SessionID    string
	Host         string // node hosting the call
	WireKnown    bool   // false when another node hosts it: only the roster is known here
	Participants []AVParticipant
	Healthy      bool
	Problems     []string // e.g. PHANTOM_MGR_SLOT, MISSING_MGR_SLOT, EMPTY_SESSION
}

// AVParticipant is one participant and, when the wire is known, its connection and tracks.
type AVParticipant struct {
	Nick                string
	Tracks              int
	InRoster, OnWire    bool
	ICE, DTLS           string
	PacketsForwarded    uint64
	BytesForwarded      uint64
	LossRatio           float64 // the worst of its published tracks
	LastKeyframeRequest time.Time
}

// Config wires the tools to the node.
type Config struct {
	ServerName, NodeName string
	// OperDIDs are the server operators' DIDs (--oper-did): the server-operator tier.
	OperDIDs []string
	State    State
	// Store is the node's event store; nil: tools that read messages say so.
	Store Store
	// Disconnects is this node's record of recent disconnects; nil: none recorded.
	Disconnects *Disconnects
	// Applied is the stream of applied Raft entries; New subscribes the disconnect record to it
	// (nil: only the IRC edge of this node files disconnects).
	Applied AppliedStream
	// Send runs the message path's checks; nil: predict_message_outcome reports the state's facts.
	Send SendChecker
	// Sync reports the replication counters; nil: only the state's applied index.
	Sync SyncSource
	// AV inspects calls; nil: AV is not running on this node (NO_ACTIVE_AV_SESSION).
	AV AVInspector
	// LinkedPeer names the peer server a channel is linked with ("" when none); nil: no peers.
	LinkedPeer func(channel string) string
	// Transports are what this node offers clients, for validate_client_config.
	Transports Transports
	// Options configure /agent/session's provider.
	Options Options
	// Limit caps tool calls per client address (a zero field: DefaultLimit); LimitOff switches it
	// off.
	Limit    rest.RateLimit
	LimitOff bool
	// HTTPClient reaches the provider; nil: a client with Options.LLMTimeout.
	HTTPClient *http.Client
	Logger     *slog.Logger
	Now        func() time.Time
}

// Transports are the node's client transports and capabilities.
type Transports struct {
	TCP, TLS, WebSocket bool
	Caps                []string
	Guests              bool
}

// Service serves the tools.
type Service struct {
	cfg     Config
	tools   map[string]tool
	limiter *rest.Limiter
	llm     *llmClient // nil without a provider
	log     *slog.Logger
	opers   map[string]bool
}

// New builds the service; Mount puts it on a REST server.
func New(cfg Config) (*Service, error) {
	if cfg.State == nil {
		return nil, errors.New("assist: no state")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Options.LLMTimeout == 0 && cfg.Options.LLMRounds == 0 {
		d := Defaults()
		cfg.Options.LLMTimeout, cfg.Options.LLMRounds = d.LLMTimeout, d.LLMRounds
	}
	if err := cfg.Options.Validate(); err != nil {
		return nil, fmt.Errorf("assist: %w", err)
	}
	s := &Service{cfg: cfg, log: cfg.Logger, opers: map[string]bool{}}
	for _, d := range cfg.OperDIDs {
		s.opers[d] = true
	}
	s.tools = s.toolTable()
	if cfg.Applied != nil && cfg.Disconnects != nil {
		if err := cfg.Applied.Subscribe("assist disconnects", stream.DropAndResync, cfg.Disconnects.observe); err != nil {
			return nil, fmt.Errorf("assist: subscribing to applied entries: %w", err)
		}
	}
	if !cfg.LimitOff {
		if cfg.Limit.Requests <= 0 || cfg.Limit.Window <= 0 {
			cfg.Limit = DefaultLimit
		}
		s.limiter = rest.NewLimiter(cfg.Limit)
	}
	if cfg.Options.Configured() {
		key, err := cfg.Options.readKey()
		if err != nil {
			return nil, fmt.Errorf("assist: %w", err)
		}
		client := cfg.HTTPClient
		if client == nil {
			client = &http.Client{Timeout: cfg.Options.LLMTimeout}
		}
		s.llm = &llmClient{url: cfg.Options.LLMURL, model: cfg.Options.LLMModel, key: key, http: client}
	}
	return s, nil
}

// FreeFormSession reports whether /agent/session has a provider.
func (s *Service) FreeFormSession() bool { return s.llm != nil }

// Mount adds POST /agent/tools/<name> for every tool and POST /agent/session, and describes them.
func (s *Service) Mount(r *rest.Server) error {
	e := r.Engine()
	for _, name := range toolNames {
		e.POST(ToolsPath+name, r.OptionalBearer(), s.limit, s.serveTool(name))
	}
	e.POST(SessionPath, r.OptionalBearer(), s.limit, s.serveSession)
	if err := r.DescribeRoutes(contractFragment); err != nil {
		return fmt.Errorf("assist routes: %w", err)
	}
	return nil
}

// limit applies the per-address limit: 429 with the Error object and Retry-After.
func (s *Service) limit(c *gin.Context) {
	if ok, retry := s.limiter.Allow(c.ClientIP()); !ok {
		c.Header("Retry-After", strconv.Itoa(retry))
		rest.WriteError(c, http.StatusTooManyRequests, fmt.Sprintf("Too many assistance requests from your address; retry in %d s", retry))
		return
	}
	c.Next()
}

// caller is who asks: the bearer's DID ("" anonymous) and whether it is a server operator.
type caller struct {
	did  string
	oper bool
}

func (s *Service) callerOf(c *gin.Context) caller {
	did := rest.DID(c)
	return caller{did: did, oper: s.isOper(did)}
}

// isOper reports whether did is a server operator: listed in --oper-did, or authenticated on a
// session that is an operator.
func (s *Service) isOper(did string) bool {
	if did == "" {
		return false
	}
	if s.opers[did] {
		return true
	}
	oper := false
	s.cfg.State.Read(func(st *fsm.State) {
		for _, se := range fsm.Diagnose(st).Sessions(did) {
			oper = oper || se.Oper
		}
	})
	return oper
}

// readBody reads a bounded JSON object body; an empty body is {}.
func readBody(c *gin.Context) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, fmt.Errorf("the body is over %d bytes", MaxBodyBytes)
		}
		return nil, errors.New("the body could not be read")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return []byte("{}"), nil
	}
	return body, nil
}

// serveTool answers one tool call.
func (s *Service) serveTool(name string) gin.HandlerFunc {
	return func(c *gin.Context) {
		body, err := readBody(c)
		var env Envelope
		if err != nil {
			env = invalidInput(s.cfg.Now(), err.Error())
		} else {
			env = s.run(c.Request.Context(), s.callerOf(c), name, body)
		}
		c.JSON(http.StatusOK, env)
	}
}

// run runs a tool on a raw JSON body.
func (s *Service) run(ctx context.Context, who caller, name string, body []byte) Envelope {
	t, ok := s.tools[name]
	if !ok {
		return newAnswer(s.cfg.Now()).diagnose(false, "INVALID_INPUT", high, "There is no tool of that name").e
	}
	if !json.Valid(body) || !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		return invalidInput(s.cfg.Now(), "the body must be a JSON object")
	}
	a, err := t.run(ctx, who, body)
	if err != nil {
		return invalidInput(s.cfg.Now(), err.Error())
	}
	return a.e
}

// invalidInput is the answer to malformed input.
func invalidInput(now time.Time, why string) Envelope {
	return newAnswer(now).diagnose(false, "INVALID_INPUT", high, "The input is not valid: "+why).
		fix("Send a JSON object matching the tool's input schema", "See the request body of this route in /api/v1/openapi.json").e
}
