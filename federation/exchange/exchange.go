package exchange

import (
	"bytes"
	"context"
	"crypto/ed25519"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/limits"
	"github.com/palaver-chat/palaver/node/stream"
)

// Store is the part of the event store the exchange reads (it writes through Acceptor).
type Store interface {
	OriginAfter(ctx context.Context, origin string, afterSeq int64, limit int) ([]eventstore.Message, error)
	OriginThrough(ctx context.Context, origin string, afterSeq, through int64, limit int) ([]eventstore.Message, error)
	CursorStore
	DeletionsAfter(ctx context.Context, origin string, afterSeq int64, limit int) ([]eventstore.Deletion, error)
	ReactionLogAfter(ctx context.Context, origin string, afterSeq int64, limit int) ([]eventstore.ReactionEvent, error)
}

// Peer is another node of the cluster.
type Peer struct {
	DID     string // did:web:<node name>
	BaseURL string // its cluster HTTP plane, https://<cluster address>
}

// Name is the node name behind a node DID (did:web:<name>).
func Name(did string) string { return strings.TrimPrefix(did, "did:web:") }

// Config wires an Exchange.
type Config struct {
	Self  string             // this node's DID
	Key   ed25519.PrivateKey // this node's server key
	Store Store
	// Accept stores what the peers made (the chat service's AcceptRemote), behind the inbound
	// pipeline's trust gate (inbound.go).
	Accept Acceptor
	Keys   KeyLookup     // registered server keys of cluster nodes
	Peers  func() []Peer // the other live nodes
	// Stored is the node's stream of stored chat events. The exchange subscribes to it (what this
	// node's clients sent, and what federation accepted, is pushed to the peers); Accept
	// publishes into it, with source Cluster, every event newly stored or applied from a peer
	// (messages, deletes, reactions) and every relayed ephemeral TAGMSG. Nil: nothing is pushed.
	Stored *stream.Stored
	// Authenticate names the node DID at the other end of a request's connection (the cluster
	// listener's TLS peer, a server of the Raft configuration), or fails; it runs before the
	// request's body is read. Nil refuses every request.
	Authenticate func(r *http.Request) (did string, err error)
	// Client reaches the peers' cluster HTTP planes (mutual TLS); nil on an unclustered node, which
	// has no node peers. PullEvery, PageSize and QueueSize are required: the node's configuration
	// (node.DefaultConfig) gives them.
	Client    *http.Client
	PullEvery time.Duration // how often each peer is pulled beside the streams
	PageSize  int           // rows per pull and per stream frame
	QueueSize int           // pushed events queued per peer
	Logger    *slog.Logger
	Now       func() time.Time
	// BeforeFrame, when set, runs before each frame a stream sends (fault injection: a panic
	// there ends that stream, which reconnects and resends from the receiver's cursor).
	BeforeFrame func()
	// ServerDID is this node's server (did:web:<server name>): the signer of its streams to
	// configured servers.
	ServerDID string
	// Events, when set, are the node's channel events (IRC event playback): served to the peers
	// that lack some (channelevents.go).
	Events EventStore
	// EventsGap, when set with Events, names the last log entry whose channel events this node did
	// not file itself (0: none); the exchange fills those in from the peers.
	EventsGap func() uint64
	// Servers plugs in the configured federated servers (federation/peering): this node streams
	// its rows to each of them, and serves their streams on the public plane (MountPublic). Nil:
	// no servers.
	Servers Servers
}

// Exchange pushes this node's events to its peers, answers their pulls, and pulls from them.
type Exchange struct {
	cfg Config
	in  *Pipeline // the inbound pipeline over cfg.Accept
	// lock tier 9 (leaf)
	mu     sync.Mutex
	queues map[string]chan Event // peer DID → pushed ephemeral items waiting
	// outboxes: peer DID → its stream of this node's messages (stream.go); conns: the streams
	// this node receives, ended by Close.
	outboxes map[string]*outbox
	// serverBoxes: configured server DID → its stream of this node's rows (servers.go)
	serverBoxes map[string]*outbox
	conns       map[net.Conn]struct{}
	through     map[string]int64     // origin DID → the origin seq its streams stored every row through
	inbound     map[string]*inStream // origin DID → the streams this node receives from it (pull.go)
	pullErrs    map[string]string    // origin DID → why its latest pull failed ("": it succeeded)
	durable     atomic.Int64         // the highest seq of this node's own rows it was told are durable (Publish)
	window      outWindow            // this node's latest rows, encoded once for every stream (window.go)
	// framesSent counts the frames this node's streams sent (to nodes and servers).
	framesSent atomic.Int64
	// lock tier 1: one pull round at a time; it stores, delivers and reads the state
	pullMu     sync.Mutex
	pullRounds atomic.Int64 // pull rounds begun
	kick       chan struct{}
	eventsKick chan struct{} // a fill of channel events may succeed now (fillEvents)
	// deadLetters counts the items refused from each peer (deadletters.go).
	deadLetters *prometheus.CounterVec
	ctx         context.Context
	cancel      context.CancelFunc
	wg          sync.WaitGroup
}

// New builds an Exchange; Start begins pushing and pulling.
func New(cfg Config) *Exchange {
	if cfg.PullEvery <= 0 || cfg.PageSize <= 0 || cfg.QueueSize <= 0 {
		panic(fmt.Sprintf("exchange: a positive pull interval (%s), page size (%d) and queue size (%d) are required",
			cfg.PullEvery, cfg.PageSize, cfg.QueueSize)) // a wiring bug
	}
	if cfg.PageSize > limits.PageItems {
		cfg.PageSize = limits.PageItems // a frame section holds at most this many rows
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	x := &Exchange{cfg: cfg, in: NewPipeline(cfg.Accept), queues: map[string]chan Event{}, outboxes: map[string]*outbox{}, serverBoxes: map[string]*outbox{}, conns: map[net.Conn]struct{}{}, through: map[string]int64{}, inbound: map[string]*inStream{}, pullErrs: map[string]string{}, kick: make(chan struct{}, 1), eventsKick: make(chan struct{}, 1), deadLetters: newDeadLetterCounter(), ctx: ctx, cancel: cancel}
	if cfg.Stored != nil {
		// Pushing is best effort (the pull catches up), so a full queue drops: DropAndResync.
		if err := cfg.Stored.Subscribe("exchange", stream.DropAndResync, x.fromStream, stream.Local, stream.Federation); err != nil {
			panic(fmt.Sprintf("exchange: %v", err)) // two exchanges on one stream: a wiring bug
		}
	}
	return x
}

// fromStream tells the streams what this node stored (what its clients sent, and what
// federation accepted: messages, deletes, reactions, each in its durable log) and pushes relayed
// TAGMSGs of its clients. A gap (items dropped) has every stream read its logs again and asks for
// a pull round.
func (x *Exchange) fromStream(it stream.Item) {
	switch {
	case it.Gap:
		x.Kick()
	case it.Kind == stream.KindMessage:
		x.Publish(*it.Message)
	case it.Kind == stream.KindDeletion:
		x.notifyOutboxes(false, true, false)
	case it.Kind == stream.KindReaction:
		x.PublishReaction(*it.Reaction)
	case it.Kind == stream.KindEphemeral && it.Source == stream.Local:
		x.Relay(*it.Message)
	}
}

// ContractFragment is the OpenAPI description of the node-to-node routes, served on the cluster
// plane only (it is not part of the public HTTP server's document).
//
//go:embed openapi.yaml
var ContractFragment []byte

// Mount registers the node-to-node routes, on the engine of the cluster's HTTP plane: never on a
// public listener.
func (x *Exchange) Mount(e *gin.Engine) {
	e.GET("/internal/v1/events", x.serveEvents)
	e.POST("/internal/v1/events", x.receivePush)
	e.GET(streamPath, x.serveStream)
	e.GET(channelEventsPath, x.serveChannelEvents)
}

// Start runs the pull loop, and the streams to the configured servers, until Close.
func (x *Exchange) Start() {
	x.wg.Add(1)
	go x.pullLoop()
	if x.cfg.Events != nil && x.cfg.EventsGap != nil {
		x.wg.Add(1)
		go x.fillEvents()
	}
	x.startServerStreams()
}

// Close stops pushing and pulling.
func (x *Exchange) Close() {
	x.cancel()
	x.closeStreams()
	x.wg.Wait()
}

// Kick asks for a pull round now (for instance when membership changed), and has every stream
// waiting to reconnect try at once.
func (x *Exchange) Kick() {
	select {
	case x.kick <- struct{}{}:
	default:
	}
	select {
	case x.eventsKick <- struct{}{}:
	default:
	}
	x.retryStreams()
}

// Publish tells every peer's stream that this node stored an event (m, which the stream reads
// back from the durable log with the rows around it). It never blocks.
func (x *Exchange) Publish(m eventstore.Message) {
	if m.Origin == Name(x.cfg.Self) && m.Seq > 0 && m.Status == "" {
		x.window.remember(m)
	}
	for {
		d := x.durable.Load()
		if m.Seq <= d || x.durable.CompareAndSwap(d, m.Seq) {
			break
		}
	}
	x.notifyOutboxes(true, false, false)
}

// enqueue queues an ephemeral item for every peer, dropping it for a peer whose queue is full.
func (x *Exchange) enqueue(ev Event) {
	for _, p := range x.cfg.Peers() {
		q := x.queue(p)
		select {
		case q <- ev:
		default:
		}
	}
}

func (x *Exchange) queue(p Peer) chan Event {
	x.mu.Lock()
	defer x.mu.Unlock()
	q, ok := x.queues[p.DID]
	if !ok {
		q = make(chan Event, x.cfg.QueueSize)
		x.queues[p.DID] = q
		x.wg.Add(1)
		go x.pushLoop(p, q)
	}
	return q
}

// pushLoop sends queued ephemeral items to one peer in batches.
func (x *Exchange) pushLoop(p Peer, q chan Event) {
	defer x.wg.Done()
	for {
		b := Push{Origin: x.cfg.Self}
		select {
		case <-x.ctx.Done():
			return
		case ev := <-q:
			b.Ephemeral = append(b.Ephemeral, ev)
		}
	drain:
		for len(b.Ephemeral) < x.cfg.PageSize {
			select {
			case ev := <-q:
				b.Ephemeral = append(b.Ephemeral, ev)
			default:
				break drain
			}
		}
		x.safely("push", func() {
			if err := x.push(p, b); err != nil {
				x.cfg.Logger.Debug("push failed; ephemeral items are not sent again", "peer", p.DID, "items", len(b.Ephemeral), "err", err)
			}
		}, "peer", p.DID, "items", len(b.Ephemeral))
	}
}

func (x *Exchange) push(p Peer, b Push) error {
	body, err := json.Marshal(b)
	if err != nil {
		return err
	}
	const path = "/internal/v1/events"
	req, err := http.NewRequestWithContext(x.ctx, http.MethodPost, strings.TrimRight(p.BaseURL, "/")+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	sign(req.Header, x.cfg.Key, x.cfg.Self, http.MethodPost, path, body, x.cfg.Now())
	resp, err := x.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("peer answered %d", resp.StatusCode)
	}
	return nil
}

const maxBody = limits.PullBytes

// peer names the node at the other end of a request, or answers 403 and returns false, before
// anything of the request's body is read.
func (x *Exchange) peer(c *gin.Context) (string, bool) {
	if x.cfg.Authenticate == nil {
		c.AbortWithStatusJSON(http.StatusForbidden, gin.H{"error": "not a node of this cluster"})
		return "", false
	}
	did, err := x.cfg.Authenticate(c.Request)
	if err != nil {
		x.cfg.Logger.Warn("exchange request refused", "remote", c.Request.RemoteAddr, "err", err)
		c.AbortWithStatusJSON(http.StatusForbidden, gin.H{"error": "not a node of this cluster"})
		return "", false
	}
	return did, true
}

// receivePush delivers the ephemeral items (typing TAGMSGs, status messages) a node pushed. A
// push carries nothing that is stored: messages, deletes and reactions travel on the stream and
// the pull, so a push that holds any is refused whole (a node of v0.1.0 sends "events": [] with
// every push, which is accepted).
func (x *Exchange) receivePush(c *gin.Context) {
	peer, ok := x.peer(c)
	if !ok {
		return
	}
	body, err := io.ReadAll(io.LimitReader(c.Request.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		c.JSON(http.StatusRequestEntityTooLarge, gin.H{"error": "batch too large"})
		return
	}
	signer, err := verify(c.Request.Header, x.cfg.Keys, http.MethodPost, c.Request.URL.RequestURI(), body, x.cfg.Now())
	if err != nil {
		c.JSON(http.StatusUnauthorized, gin.H{"error": err.Error()})
		return
	}
	var b Push
	if err := json.Unmarshal(body, &b); err != nil {
		c.JSON(http.StatusBadRequest, gin.H{"error": "malformed batch"})
		return
	}
	if b.Origin != signer || signer != peer {
		c.JSON(http.StatusForbidden, gin.H{"error": "a node may only push its own events"})
		return
	}
	if len(b.Events) > 0 || len(b.Deletions) > 0 || len(b.Reactions) > 0 {
		c.JSON(http.StatusBadRequest, gin.H{"error": "a push carries ephemeral items only: messages, deletes and reactions travel on the stream"})
		return
	}
	x.deliverEphemeral(Name(b.Origin), b.Ephemeral)
	c.JSON(http.StatusOK, gin.H{"ok": true})
}

// store has the chat service store a batch's events in one durable commit and publish those that
// were new, in order. It returns the last origin seq of the batch. An event this node cannot accept
// (validate, or an acceptance rule) is recorded as a dead letter from peer and passed over: the
// seq returned covers it, so the cursor moves past it.
func (x *Exchange) store(ctx context.Context, peer string, b Batch) (int64, error) {
	origin := Name(b.Origin)
	msgs := make([]*eventstore.Message, 0, len(b.Events))
	kept := make([]Event, 0, len(b.Events))
	var last int64
	var dead []eventstore.DeadLetter
	for _, ev := range b.Events {
		last = max(last, ev.OriginSeq)
		if err := ev.validate(); err != nil {
			dead = append(dead, deadLetterOf(origin, LogMessages, ev.OriginSeq, ev.MsgID, reasonOf(err), err.Error()))
			continue
		}
		msgs = append(msgs, ev.message(origin))
		kept = append(kept, ev)
	}
	if len(msgs) > 0 {
		// A msgid already stored (pushed earlier, or pulled twice) is not stored again: only the
		// new ones are published.
		res, err := x.in.Receive(ctx, clusterSource(origin, false), chat.Batch{Messages: msgs})
		if err != nil {
			return 0, fmt.Errorf("store batch from %s: %w", origin, err)
		}
		for i, o := range res.Messages {
			if i < len(kept) && refused(o) {
				dead = append(dead, deadLetterOf(origin, LogMessages, kept[i].OriginSeq, kept[i].MsgID, string(o), "refused by "+string(o)))
			}
		}
	}
	if err := x.recordDeadLetters(ctx, peer, dead); err != nil {
		return 0, err
	}
	return last, nil
}

// signedGet names the node that sent a bodiless request over its own connection and signed it,
// or answers 401/403 and returns false.
func (x *Exchange) signedGet(c *gin.Context) (string, bool) {
	peer, ok := x.peer(c)
	if !ok {
		return "", false
	}
	signer, err := verify(c.Request.Header, x.cfg.Keys, http.MethodGet, c.Request.URL.RequestURI(), nil, x.cfg.Now())
	if err != nil {
		c.JSON(http.StatusUnauthorized, gin.H{"error": err.Error()})
		return "", false
	}
	if signer != peer {
		c.JSON(http.StatusForbidden, gin.H{"error": "the request is signed by another node than the connection's"})
		return "", false
	}
	return signer, true
}

// serveEvents answers a cluster node's pull: this node's own events after a seq. after=-1 asks
// for no message rows (a receiver whose stream from this node is healthy pulls only the logs the
// stream does not carry); any other after is answered with the rows, whatever this node's stream
// to the puller looks like from here: a receiver pulls rows only when its end of the stream is
// down or silent.
func (x *Exchange) serveEvents(c *gin.Context) {
	if _, ok := x.signedGet(c); !ok {
		return
	}
	after, err1 := strconv.ParseInt(c.DefaultQuery("after", "0"), 10, 64)
	limit, err2 := strconv.Atoi(c.DefaultQuery("limit", strconv.Itoa(x.cfg.PageSize)))
	delAfter, err3 := strconv.ParseInt(c.DefaultQuery("deleted_after", "-1"), 10, 64)
	reactAfter, err4 := strconv.ParseInt(c.DefaultQuery("reacted_after", "-1"), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || after < -1 || limit < 1 || delAfter < -1 || reactAfter < -1 {
		c.JSON(http.StatusBadRequest, gin.H{"error": "after, deleted_after and reacted_after must be integers ≥ -1, limit a positive integer"})
		return
	}
	limit = min(limit, x.cfg.PageSize)
	var msgs []eventstore.Message
	if after >= 0 {
		var err error
		if msgs, err = x.cfg.Store.OriginAfter(c.Request.Context(), Name(x.cfg.Self), after, limit); err != nil {
			c.JSON(http.StatusServiceUnavailable, gin.H{"error": "store unavailable"})
			return
		}
	}
	b := Batch{Origin: x.cfg.Self, Events: make([]Event, 0, len(msgs))}
	for _, m := range msgs {
		b.Events = append(b.Events, eventOf(m))
	}
	if delAfter >= 0 {
		dels, err := x.cfg.Store.DeletionsAfter(c.Request.Context(), Name(x.cfg.Self), delAfter, limit)
		if err != nil {
			c.JSON(http.StatusServiceUnavailable, gin.H{"error": "store unavailable"})
			return
		}
		for _, d := range dels {
			b.Deletions = append(b.Deletions, pullDeletionOf(d))
		}
	}
	if reactAfter >= 0 {
		rs, err := x.cfg.Store.ReactionLogAfter(c.Request.Context(), Name(x.cfg.Self), reactAfter, limit)
		if err != nil {
			c.JSON(http.StatusServiceUnavailable, gin.H{"error": "store unavailable"})
			return
		}
		for _, r := range rs {
			b.Reactions = append(b.Reactions, pullReactionOf(r))
		}
	}
	fitPull(&b, limits.PullBytes-pullMargin)
	x.answerSigned(c, b)
}

// answerSigned answers a signed GET with v in JSON, signed by this node.
func (x *Exchange) answerSigned(c *gin.Context, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		c.JSON(http.StatusInternalServerError, gin.H{"error": "encode"})
		return
	}
	sign(c.Writer.Header(), x.cfg.Key, x.cfg.Self, http.MethodGet, c.Request.URL.RequestURI(), body, x.cfg.Now())
	c.Data(http.StatusOK, "application/json", body)
}

// pullMargin is what a pull's answer keeps free of the budget for rows: its envelope, and the
// first row of each log, taken whatever the budget (limits_test.go checks the largest fit).
const pullMargin = 1 << 20

// fitPull cuts a pull's answer to budget bytes of JSON rows: each log keeps its rows, in order,
// while they fit (messages first, then deletes, then reactions), and at least its first row; a
// log cut short sets More, and the puller asks again after the last row it got.
func fitPull(b *Batch, budget int) {
	used := 0
	fit := func(n int, size func(int) int) int {
		for i := range n {
			s := size(i) + 1 // the comma
			if i > 0 && used+s > budget {
				b.More = true
				return i
			}
			used += s
		}
		return n
	}
	sizeOf := func(v any) int {
		raw, err := json.Marshal(v)
		if err != nil {
			return budget // never fits after a first row
		}
		return len(raw)
	}
	b.Events = b.Events[:fit(len(b.Events), func(i int) int { return sizeOf(&b.Events[i]) })]
	b.Deletions = b.Deletions[:fit(len(b.Deletions), func(i int) int { return sizeOf(&b.Deletions[i]) })]
	b.Reactions = b.Reactions[:fit(len(b.Reactions), func(i int) int { return sizeOf(&b.Reactions[i]) })]
}

// pull copies a peer's events of the logs in logs after this node's cursors for it, page by page,
// advancing each cursor only over events durably stored here. A log not asked for is sent as -1
// (the peer answers none of it).
func (x *Exchange) pull(ctx context.Context, p Peer, logs logSet) error {
	origin := Name(p.DID)
	position := func(l Log) (int64, error) {
		if !logs.has(l) {
			return -1, nil
		}
		return ReadCursor(ctx, x.cfg.Store, inCursor(origin, l))
	}
	for {
		cursor, err := position(LogMessages)
		if err != nil {
			return err
		}
		delCursor, err := position(LogDeletes)
		if err != nil {
			return err
		}
		reactCursor, err := position(LogReactions)
		if err != nil {
			return err
		}
		if at := x.streamedThrough(p.DID); cursor >= 0 && at > cursor {
			// A stream from this origin stored its rows through at (its cursor is written
			// lazily): ask only for what came after.
			if err := WriteCursor(ctx, x.cfg.Store, inCursor(origin, LogMessages), at); err != nil {
				return err
			}
			cursor = at
		}
		pathQuery := "/internal/v1/events?after=" + strconv.FormatInt(cursor, 10) + "&deleted_after=" +
			strconv.FormatInt(delCursor, 10) + "&reacted_after=" + strconv.FormatInt(reactCursor, 10) +
			"&limit=" + strconv.Itoa(x.cfg.PageSize)
		body, err := x.getSigned(ctx, p, pathQuery)
		if err != nil {
			return err
		}
		var b Batch
		if err := json.Unmarshal(body, &b); err != nil || b.Origin != p.DID {
			return fmt.Errorf("malformed batch from %s", p.DID)
		}
		if !logs.has(LogMessages) && len(b.Events) > 0 || !logs.has(LogDeletes) && len(b.Deletions) > 0 ||
			!logs.has(LogReactions) && len(b.Reactions) > 0 {
			return fmt.Errorf("%s answered with a log it was not asked for", p.DID)
		}
		// A log not asked for (cursor -1) came empty: its last is 0, and its cursor is not written.
		last, err := x.store(ctx, p.DID, b)
		if last > max(cursor, 0) {
			if cerr := WriteCursor(ctx, x.cfg.Store, inCursor(origin, LogMessages), last); cerr != nil {
				return cerr
			}
		}
		if err != nil {
			return err
		}
		dels := make([]eventstore.Deletion, 0, len(b.Deletions))
		for _, d := range b.Deletions {
			dels = append(dels, d.deletion())
		}
		lastDel, err := x.applyDeletions(ctx, p.DID, origin, dels)
		if lastDel > max(delCursor, 0) {
			if cerr := WriteCursor(ctx, x.cfg.Store, inCursor(origin, LogDeletes), lastDel); cerr != nil {
				return cerr
			}
		}
		if err != nil {
			return err
		}
		reacts := make([]eventstore.ReactionEvent, 0, len(b.Reactions))
		for _, r := range b.Reactions {
			reacts = append(reacts, r.reaction())
		}
		lastReact, err := x.applyReactions(ctx, p.DID, origin, reacts)
		if lastReact > max(reactCursor, 0) {
			if cerr := WriteCursor(ctx, x.cfg.Store, inCursor(origin, LogReactions), lastReact); cerr != nil {
				return cerr
			}
		}
		if err != nil {
			return err
		}
		full := b.More || len(b.Events) >= x.cfg.PageSize || len(b.Deletions) >= x.cfg.PageSize || len(b.Reactions) >= x.cfg.PageSize
		// A full page that moved no cursor is one waiting for a message from another origin.
		moved := last > max(cursor, 0) || lastDel > max(delCursor, 0) || lastReact > max(reactCursor, 0)
		if !full || !moved {
			return nil
		}
	}
}

// getSigned sends p a signed GET of pathQuery and returns its answer's body, which p must have
// signed.
func (x *Exchange) getSigned(ctx context.Context, p Peer, pathQuery string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(p.BaseURL, "/")+pathQuery, nil)
	if err != nil {
		return nil, err
	}
	sign(req.Header, x.cfg.Key, x.cfg.Self, http.MethodGet, pathQuery, nil, x.cfg.Now())
	resp, err := x.cfg.Client.Do(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("peer answered %d: %s", resp.StatusCode, truncate(string(body), 200))
	}
	signer, err := verify(resp.Header, x.cfg.Keys, http.MethodGet, pathQuery, body, x.cfg.Now())
	if err != nil || signer != p.DID {
		return nil, fmt.Errorf("unsigned or foreign answer from %s: %v", p.DID, err)
	}
	return body, nil
}

// applyDeletions applies an origin's deletes in order and returns the last one applied. A delete
// of a message not stored here yet stops the walk: the cursor stays before it, and it is applied on
// a later round, once the message has arrived from its own origin. A malformed delete, or one an
// acceptance rule refuses, is a dead letter from peer, passed over.
func (x *Exchange) applyDeletions(ctx context.Context, peer, originName string, dels []eventstore.Deletion) (int64, error) {
	batch := make([]eventstore.Deletion, 0, len(dels))
	var dead []eventstore.DeadLetter
	seqs := make([]int64, 0, len(dels)) // the seq each item of dels stands for, in order
	at := make([]int, 0, len(dels))     // its index in batch, or -1
	for _, d := range dels {
		seqs = append(seqs, d.Seq)
		if err := validDeletion(d); err != nil {
			dead = append(dead, deadLetterOf(originName, LogDeletes, d.Seq, d.RootMsgID, reasonOf(err), err.Error()))
			at = append(at, -1)
			continue
		}
		at = append(at, len(batch))
		d.Origin = originName
		batch = append(batch, d)
	}
	// Applied before (pushed or pulled twice), or naming another venue: passed over.
	res, err := x.in.Receive(ctx, clusterSource(originName, true), chat.Batch{Deletions: batch})
	var last int64
	for i, j := range at {
		if j >= 0 {
			o := chat.Outcome("")
			if j < len(res.Deletions) {
				o = res.Deletions[j]
			}
			if o == chat.Wait || o == "" {
				break
			}
			if refused(o) {
				dead = append(dead, deadLetterOf(originName, LogDeletes, batch[j].Seq, batch[j].RootMsgID, string(o), "refused by "+string(o)))
			}
		}
		last = seqs[i]
	}
	if err != nil {
		return last, fmt.Errorf("deletes from %s: %w", originName, err)
	}
	if err := x.recordDeadLetters(ctx, peer, dead); err != nil {
		return 0, err
	}
	return last, nil
}

// validDeletion checks what a receiver relies on before applying a delete.
func validDeletion(d eventstore.Deletion) error {
	switch {
	case d.Seq <= 0 || d.RootMsgID == "" || len(d.RootMsgID) > limits.MsgIDBytes:
		return fmt.Errorf("malformed deletion %q", truncate(d.RootMsgID, 64))
	case len(d.Venue) > limits.VenueBytes || len(d.Sender) > limits.NameBytes || len(d.SenderDID) > limits.NameBytes:
		return fmt.Errorf("%w: a deletion's venue or names", errOversize)
	}
	return checkTags(d.Tags)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
