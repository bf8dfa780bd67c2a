package irc

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/palaver-chat/palaver/confusable"
	"github.com/palaver-chat/palaver/gateway/metrics"
	"github.com/palaver-chat/palaver/gateway/sasl"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/linkroute"
	"github.com/palaver-chat/palaver/node/stream"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// State is the read side of the local replica.
type State interface {
	Read(func(*fsm.State))
}

// Proposer submits a command to the replicated log. Propose returns once this node has applied
// the entry AND rendered it: every Backpressure subscriber of the Applied stream (the edge's own
// render among them) has handled it, so a command's own effects reach its client before the
// command's replies, and a later read on this node sees the write. Consequently code running on
// an Applied subscriber's goroutine must never propose and wait.
type Proposer interface {
	Propose(ctx context.Context, cmd fsm.Command) (fsm.Result, error)
}

// History is the node's durable event store, as the IRC edge reads it (it writes through
// Messages).
type History interface {
	Get(ctx context.Context, msgid string) (eventstore.Message, error)
	Root(ctx context.Context, msgid string) (eventstore.Message, error)
	Current(ctx context.Context, msgid string) (eventstore.Message, error)
	Reactions(ctx context.Context, roots []string) (map[string]map[string]int, error)
	Before(ctx context.Context, venue string, before eventstore.Bound, limit int) ([]eventstore.Message, error)
	After(ctx context.Context, venue string, after eventstore.Bound, limit int) ([]eventstore.Message, error)
	ResumeAfter(ctx context.Context, venue, msgid string, limit int) ([]eventstore.Message, error)
	Between(ctx context.Context, venue string, a, b eventstore.Bound, limit int) ([]eventstore.Message, error)
	Around(ctx context.Context, venue string, center eventstore.Bound, limit int) ([]eventstore.Message, error)
	Latest(ctx context.Context, venue string, after eventstore.Bound, limit int) ([]eventstore.Message, error)
}

// Messages is the chat service (node/chat.Service) as the edge uses it: it checks, signs,
// stores and publishes what the edge's clients send; the edge parses, orders, answers and
// renders.
type Messages interface {
	// Prepare checks a client's event and settles its msgid, references and signature.
	Prepare(ctx context.Context, d chat.Draft) (*chat.Write, *chat.Refusal)
	// Commit stores prepared writes durably (messages in one commit) and publishes them.
	Commit(ctx context.Context, writes ...*chat.Write) []*chat.Refusal
	// SendAsNode writes a message of this node itself.
	SendAsNode(ctx context.Context, d chat.Draft, store bool) (*chat.Write, error)
	// NewMsgID mints a msgid.
	NewMsgID(at time.Time) string
}

// Config is the IRC edge's immutable configuration. New sets no defaults: the values come from
// the node's configuration (node.DefaultConfig).
type Config struct {
	ServerName  string
	Network     string
	NodeName    string
	Incarnation string // this process; sessions of older incarnations are purged at start
	Version     string
	MOTD        []string
	Opers       map[string]string // OPER name → bcrypt hash of the password (oper.go)
	OperDIDs    []string          // DIDs that become server operators when they authenticate
	NoGuests    bool
	Password    string // connection password clients send with PASS before registering (pass.go); "" for none
	// FloodLimits enables the per-connection command and message limits. Only benchmarks turn it off.
	FloodLimits bool
	SendQBytes  int           // per-connection output budget
	PingAfter   time.Duration // idle time before the server pings
	PingTimeout time.Duration // time to answer that ping
	JoinHistory int           // messages replayed on JOIN; 0 or negative: none
	Logger      *slog.Logger
	Metrics     *metrics.Set
	// Messages is the chat service: every message, edit, delete and reaction goes through it.
	Messages Messages
	// KeyLifetime is how long a MSGSIG session key counts after registration (0 = forever).
	KeyLifetime time.Duration
	// KeySweepEvery is how often sessions with expired keys are looked for.
	KeySweepEvery time.Duration
	// Streams are the node's streams (streams.go): the edge renders applied entries and delivers
	// chat events stored elsewhere, and publishes what its clients send (messages, edits, deletes
	// and reactions once stored; typing and status messages as relayed). Nil in unit tests.
	Streams *stream.Streams
	// Links routes changes of channels linked with peer servers (node/linkroute); nil: no peer
	// servers.
	Links linkroute.Router
	// Disconnects is told why each registered connection ended (disconnects.go); nil: nobody.
	Disconnects DisconnectRecorder
	// Now is the clock for SASL challenge lifetimes and registration codes; nil means time.Now.
	// Tests inject one.
	Now func() time.Time
	// Registration configures draft/account-registration (register.go).
	Registration Registration
	// Metadata3 offers draft/metadata-3 beside draft/metadata-2 (metadata.go). Off by default: it
	// makes CAP LS longer than one line, and freeq's JavaScript SDK ends its negotiation on an LS
	// line naming none of the capabilities it wants, before it authenticates.
	Metadata3 bool
	// ServerInfo describes this server in LINKS (364 RPL_LINKS; links.go).
	ServerInfo string
	// Nodes lists the other live nodes of this server's cluster, for LINKS; nil: none (an
	// unclustered node).
	Nodes func() []ClusterNode
	// Rejoin, when positive, rejoins an account's connection at login to the channels its
	// sessions were in when they ended, remembered for this long (rejoin.go); 0: off.
	Rejoin time.Duration
}

// Server is the IRC edge of one node.
type Server struct {
	cfg      Config
	state    State
	proposer Proposer
	history  History
	playback PlaybackStore // nil unless EnablePlayback was called (playback.go)
	events   History       // the history with kept TAGMSGs (eventstore.Playback); nil unless EnablePlayback was called
	// playbackGap is the last log index whose channel events this node may not have filed itself
	// (entries applied before EnablePlayback, or skipped by a snapshot): PlaybackGap.
	playbackGap atomic.Uint64
	verifier    *sasl.Verifier
	log         *slog.Logger
	started     time.Time
	isupport    []string

	// lock tier 4: the local session registry; taken under the state read lock
	mu      sync.RWMutex
	clients map[string]*client // registered local sessions by session id (addClient, dropClient)
	pending map[string]*client // bearer token hash → unregistered client that minted it
	// clientsGen moves with every change to clients: the member lists (members) are built under
	// one generation.
	clientsGen uint64

	members memberLists // the channels' local members, for the fan-out (members.go)

	conns    atomic.Int64
	batchSeq atomic.Uint64

	msgs Messages // the chat service (cfg.Messages)

	ctx    context.Context
	cancel context.CancelFunc

	links linkroute.Router // linked-channel routing (federation.go); never nil

	rendered renderedMembers // local channel members as of the last rendered event (events.go)

	ext extensions // verbs, message checks and join tags other packages registered (extend.go)

	keepalive *keepalive // pings idle connections (keepalive.go)

	handlers handlerPool // goroutines that handle lines and run pipelines (handlers.go)

	whowas        whowasLog        // former nicks for WHOWAS (whowas.go)
	maxUsers      maxCounts        // the most users seen, for LUSERS (queries.go)
	nickSkeletons confusable.Index // skeletons of the nicks in use and owned (nickname.go)
	operGuard     operGuard        // failed OPERs per client address (oper.go)
	monitors      monitorIndex     // MONITOR lists by watched nick (monitor.go)
	metaSubs      metadataSubs     // metadata subscriptions per connection (metadata.go)
	registrations registerGuard    // accounts registered per client address (register.go)
	verifications pendingAccounts  // registrations awaiting their e-mailed code (verify.go)
}

// New builds the IRC edge.
func New(cfg Config, state State, proposer Proposer, history History, verifier *sasl.Verifier) *Server {
	if cfg.SendQBytes <= 0 || cfg.PingAfter <= 0 || cfg.PingTimeout <= 0 || cfg.KeySweepEvery <= 0 {
		// The node validates these (node.Config); their defaults are node.DefaultConfig's.
		panic(fmt.Sprintf("irc: send queue %d, ping after %s, ping timeout %s, key sweep %s: each must be positive",
			cfg.SendQBytes, cfg.PingAfter, cfg.PingTimeout, cfg.KeySweepEvery))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Network == "" {
		cfg.Network = cfg.ServerName
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg: cfg, state: state, proposer: proposer, history: history, verifier: verifier,
		log: cfg.Logger, started: time.Now(),
		clients: map[string]*client{}, pending: map[string]*client{},
		msgs: cfg.Messages,
		ctx:  ctx, cancel: cancel,
	}
	if s.links = cfg.Links; s.links == nil {
		s.links = linkroute.New(nil, nil) // no peer servers: every change is this server's
	}
	if verifier != nil && verifier.Passwords == nil {
		verifier.Passwords = s.loginCredentials // PLAIN and SCRAM-SHA-256 (logins.go)
	}
	s.isupport = buildISupport(cfg)
	if err := s.subscribe(cfg.Streams); err != nil {
		panic(err) // two edges on one set of streams: a wiring bug
	}
	go s.sweepKeys(cfg.KeySweepEvery)
	s.keepalive = newKeepalive()
	go s.keepalive.run(ctx, cfg.PingAfter, cfg.PingTimeout)
	go s.handlers.expireEvery(ctx, time.Second, handlerIdle)
	return s
}

// Close disconnects every client.
func (s *Server) Close() {
	s.cancel()
	s.mu.RLock()
	list := make([]*client, 0, len(s.clients))
	for _, c := range s.clients {
		list = append(list, c)
	}
	s.mu.RUnlock()
	for _, c := range list {
		c.q.closeAfterFlush(c.line(s.cfg.ServerName, "ERROR", "Server shutting down"))
	}
}

// Connections is the number of open client connections on this node.
func (s *Server) Connections() int { return int(s.conns.Load()) }

// Uptime is the time since the edge started.
func (s *Server) Uptime() time.Duration { return time.Since(s.started) }

// newToken mints an opaque bearer token of 256 random bits and its hash.
func newToken() (token, hash string) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	token = base64.RawURLEncoding.EncodeToString(b[:])
	return token, HashToken(token)
}

// HashToken is the form in which a bearer token is replicated: its SHA-256, hex.
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// ResolveToken maps a bearer token to the DID of the live IRC session that minted it.
func (s *Server) ResolveToken(token string) (string, bool) {
	if token == "" {
		return "", false
	}
	hash := HashToken(token)
	var did string
	s.state.Read(func(st *fsm.State) {
		if se, ok := st.SessionByToken(hash); ok {
			did = se.DID
		}
	})
	if did != "" {
		return did, true
	}
	s.mu.RLock()
	c := s.pending[hash]
	s.mu.RUnlock()
	if c != nil {
		if d := c.pendingDID(); d != "" {
			return d, true
		}
	}
	return "", false
}

func (s *Server) localClient(id string) *client {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.clients[id]
}

func (s *Server) isOperDID(did string) bool {
	for _, d := range s.cfg.OperDIDs {
		if d == did {
			return true
		}
	}
	return false
}

func (s *Server) nextBatchID() string {
	n := s.batchSeq.Add(1)
	return "b" + encodeBase36(n)
}

func encodeBase36(n uint64) string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	if n == 0 {
		return "0"
	}
	var b [16]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = digits[n%36]
		n /= 36
	}
	return string(b[i:])
}
