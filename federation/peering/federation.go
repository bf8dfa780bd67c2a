package peering

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/palaver-chat/palaver/confusable"
	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/stream"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Store is the part of the node's event store federation uses: the chat service's writes (when
// Config.Accept is nil), roots, and the envelope sequence rows. (The exchange's stream reads the
// durable logs this node's rows go out from.)
type Store interface {
	Append(ctx context.Context, msgs ...*eventstore.Message) error
	Root(ctx context.Context, msgid string) (eventstore.Message, error)
	Delete(ctx context.Context, rootMsgID string, at time.Time) error
	DeleteAt(ctx context.Context, rootMsgID string, at time.Time, origin string, by eventstore.Deleter) error
	// FileReaction files a react or unreact (made here, or from a peer) in the reaction log.
	FileReaction(ctx context.Context, r eventstore.ReactionEvent) (applied bool, err error)
	Cursor(ctx context.Context, name string) (int64, error)
	SetCursor(ctx context.Context, name string, seq int64) error
}

// State is the read side of the replicated state.
type State interface{ Read(func(*fsm.State)) }

// Proposer submits commands to the replicated log.
type Proposer interface {
	Propose(ctx context.Context, cmd fsm.Command) (fsm.Result, error)
}

// Config wires federation into a node.
type Config struct {
	ServerDID string             // did:web:<server name>, shared by every node of the cluster
	NodeName  string             // this node: the origin of the rows it sends and of those it stores
	Key       ed25519.PrivateKey // this node's server key
	// Allow is the exchange's allow-list, whose configured servers are this node's peers; nil:
	// one is built from Peers (a node passes the list its cluster exchange shares).
	Allow *exchange.AllowList
	Peers []Peer
	Links []Link
	Store Store
	// Accept is the node's chat service, which stores and publishes what a peer's envelope
	// carries once peering's checks passed, behind the inbound pipeline's trust gate (the same
	// as the exchange's); nil: a chat service over Store and Streams.Stored.
	Accept   exchange.Acceptor
	State    State
	Proposer Proposer
	// Client reaches peers and their did:web documents; it must be the SSRF-guarded client.
	Client       *http.Client
	PeerKeyRetry time.Duration // how long a peer document without a key is not asked again; 0: always asked
	// Streams are the node's streams. Federation subscribes to Applied (linked channels' state
	// changes and presence made here go to their peers), and publishes every message, delete and
	// reaction it accepted from a peer into Stored with source Federation (local sessions and the
	// other nodes of the cluster get it from there). Nil in unit tests: nothing is observed or
	// published.
	Streams       *stream.Streams
	Registerer    prometheus.Registerer // palaver_federation_* metrics; nil: not exported
	SendEvery     time.Duration         // first retry of a failed envelope (backoff up to 10×)
	CatchUpWindow time.Duration         // oldest event sent
	Logger        *slog.Logger
	Now           func() time.Time
}

// Federation runs this node's side of every configured peering.
type Federation struct {
	cfg     Config
	log     *slog.Logger
	peers   map[string]Peer            // by DID
	links   map[string]map[string]bool // peer DID → linked channels
	keys    *peerKeys
	metrics *metrics
	pipe    *exchange.Pipeline // the inbound pipeline
	// lookalikes indexes the nicks in use and owned here by skeleton (ownedLocally).
	lookalikes confusable.Index

	mu       sync.Mutex
	limiters map[string]*rate.Limiter // peer DID → inbound events per second
	lastSeq  map[string]int64         // "did kid" → last accepted envelope seq (cache of the store)
	answered map[string]time.Time     // request ids of this server's topic requests answered here
	// inbound: peer DID → its lock (lock tier 9): one envelope of a peer applied at a time, in
	// sequence order; a peer whose envelope is slow to apply (its user keys slow to read, say)
	// holds only its own. Made in New, read-only after.
	inbound  map[string]*sync.Mutex
	outboxes map[string]*outbox
	// sleep waits out the rate limit's delay before a stream frame is applied (pace); tests
	// replace it.
	sleep func(ctx context.Context, d time.Duration) error

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New checks the configuration and builds the federation side of a node; Start runs the outboxes.
// The exchange runs the streams (Federation is its exchange.Servers).
func New(cfg Config) (*Federation, error) {
	// No defaults here: the node's configuration (node.DefaultConfig) gives every value.
	if cfg.SendEvery <= 0 || cfg.CatchUpWindow <= 0 || cfg.PeerKeyRetry < 0 {
		return nil, fmt.Errorf("peering: send interval %s and catch-up window %s must be positive, peer key retry %s not negative",
			cfg.SendEvery, cfg.CatchUpWindow, cfg.PeerKeyRetry)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Client == nil {
		return nil, fmt.Errorf("peering: a guarded HTTP client is required")
	}
	if err := validServerDID(cfg.ServerDID); err != nil {
		return nil, fmt.Errorf("peering: server identity: %w", err)
	}
	f := &Federation{cfg: cfg, log: cfg.Logger, peers: map[string]Peer{}, links: map[string]map[string]bool{},
		limiters: map[string]*rate.Limiter{}, lastSeq: map[string]int64{}, outboxes: map[string]*outbox{},
		answered: map[string]time.Time{}, inbound: map[string]*sync.Mutex{}, sleep: sleepCtx}
	if cfg.Allow == nil {
		members := make([]exchange.Member, 0, len(cfg.Peers))
		for _, p := range cfg.Peers {
			if p.Trust == "" {
				p.Trust = TrustRelay
			}
			members = append(members, p.Member())
		}
		allow, err := exchange.NewAllowList(nil, members)
		if err != nil {
			return nil, fmt.Errorf("peering: %w", err)
		}
		cfg.Allow = allow
	} else if len(cfg.Peers) > 0 {
		return nil, fmt.Errorf("peering: peers come from the allow-list or from Peers, not both")
	}
	for _, m := range cfg.Allow.Servers() {
		p := Peer{DID: m.DID, BaseURL: m.BaseURL, Trust: m.Trust}
		if p.DID == cfg.ServerDID {
			return nil, fmt.Errorf("peering: %s is this server", p.DID)
		}
		if err := validServerDID(p.DID); err != nil {
			return nil, fmt.Errorf("peering: peer: %w", err)
		}
		f.peers[p.DID] = p
		f.links[p.DID] = map[string]bool{}
		f.limiters[p.DID] = rate.NewLimiter(rate.Limit(MaxBatchItems), MaxBatchItems)
		f.inbound[p.DID] = &sync.Mutex{}
	}
	for _, l := range cfg.Links {
		if _, ok := f.peers[l.Peer]; !ok {
			return nil, fmt.Errorf("peering: --link-channel %s names %s, which is not a configured --peer", l.Channel, l.Peer)
		}
		f.links[l.Peer][l.Channel] = true
	}
	if cfg.Accept == nil {
		cc := chat.Config{Store: cfg.Store, NodeName: cfg.NodeName, Logger: cfg.Logger}
		if cfg.Streams != nil {
			cc.Stored = cfg.Streams.Stored
		}
		cfg.Accept = chat.New(cc)
	}
	f.pipe = exchange.NewPipeline(cfg.Accept)
	f.keys = newPeerKeys(cfg.Client, cfg.PeerKeyRetry, cfg.Now, f.fileKey)
	f.metrics = newMetrics(cfg.Registerer)
	f.ctx, f.cancel = context.WithCancel(context.Background())
	// The outboxes exist from the start (Start runs them): the stream subscribers read the map.
	for _, did := range f.peerDIDs() {
		f.outboxes[did] = newOutbox(f, f.peers[did])
	}
	if err := f.subscribe(cfg.Streams); err != nil {
		return nil, err
	}
	return f, nil
}

// subscribe makes federation a subscriber of the node's Applied stream (Backpressure: a linked
// channel's topic change must reach its peer). What this node stores goes to the peers on the
// exchange's stream, which reads the durable logs itself.
func (f *Federation) subscribe(st *stream.Streams) error {
	if st == nil {
		return nil
	}
	if err := st.Applied.Subscribe("federation", stream.Backpressure, func(e stream.Entry) {
		if !e.Resync {
			f.Observe(e.Events)
		}
	}); err != nil {
		return fmt.Errorf("peering: %w", err)
	}
	return nil
}

// Mount registers the federation routes.
func (f *Federation) Mount(e *gin.Engine) {
	e.POST("/federation/v1/events", f.receive)
}

// Start runs one outbox per peer until Close.
func (f *Federation) Start() {
	for _, did := range f.peerDIDs() {
		o := f.outboxes[did]
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			o.run(f.ctx)
		}()
	}
}

// Close stops the outboxes.
func (f *Federation) Close() {
	f.cancel()
	f.wg.Wait()
}

// Linked reports whether channel (folded) is linked with peer.
func (f *Federation) Linked(peerDID, channel string) bool { return f.links[peerDID][channel] }

// IsLinked reports whether channel (folded) is linked with a peer.
func (f *Federation) IsLinked(channel string) bool { return f.PeerOf(channel) != "" }

// PeerOf returns the peer a channel is linked with ("" when none).
func (f *Federation) PeerOf(channel string) string {
	for _, did := range f.peerDIDs() {
		if f.links[did][channel] {
			return did
		}
	}
	return ""
}

func (f *Federation) peerDIDs() []string {
	out := make([]string, 0, len(f.peers))
	for did := range f.peers {
		out = append(out, did)
	}
	sort.Strings(out)
	return out
}

// fileKey registers a peer server key through Raft so every node verifies with it.
func (f *Federation) fileKey(ctx context.Context, did, kid string, pub ed25519.PublicKey) error {
	if f.cfg.Proposer == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := f.cfg.Proposer.Propose(ctx, fsm.RegisterKey{DID: did, KID: kid, PublicKey: pub, Source: "origin-server", Purpose: "msgsig"})
	if err != nil {
		return fmt.Errorf("register %s key %s: %w", did, kid, err)
	}
	if res.Code != fsm.OK && res.Code != fsm.NoChange {
		return fmt.Errorf("register %s key %s: %s", did, kid, res.Code)
	}
	return nil
}
