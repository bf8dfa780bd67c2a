package media

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/palaver-chat/palaver/gateway/fetchguard"
	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/raft/fsm"
	fsmmedia "github.com/palaver-chat/palaver/raft/fsm/media"
)

//go:embed openapi.yaml
var contractFragment []byte

// State reads the replicated state (fsm.Machine).
type State interface {
	Read(func(*fsm.State))
}

// Proposer proposes a command through Raft and returns once this node applied it.
type Proposer interface {
	Propose(ctx context.Context, cmd fsm.Command) (fsm.Result, error)
}

// Holders reaches the other servers of the cluster over the cluster plane. Nil on a single node.
type Holders interface {
	// FetchHeld asks node for an object's plaintext; rangeHeader is the client's Range header
	// ("" for none).
	FetchHeld(ctx context.Context, node, id, rangeHeader string) (*http.Response, error)
	// StoreCopy sends an object's plaintext (size bytes) to node, which seals its own copy.
	StoreCopy(ctx context.Context, node, id string, size int64, body io.Reader) error
	// Servers lists the node names of the servers of the Raft configuration.
	Servers() []string
	// Alive reports whether gossip sees node alive.
	Alive(node string) bool
}

// Levels reports the feature level of the cluster (fsm.Level): the lowest of its servers, below
// this build's own while a rolling upgrade leaves a server of an earlier version.
type Levels interface {
	ClusterLevel() int
}

// PDSResolver finds the PDS base URL of a DID (from its DID document).
type PDSResolver interface {
	PDS(ctx context.Context, did string) (string, error)
}

// Config wires the service.
type Config struct {
	Options Options
	// Node is this node's name: the holder named in the records of its uploads.
	Node     string
	BaseURL  string
	State    State
	Proposer Proposer
	Holders  Holders
	// Levels is the cluster's feature level, which chooses the shape of an upload's record
	// (replicas.go); nil: every server applies this build's fsm.Level.
	Levels Levels
	PDS    PDSResolver
	// Linearize waits until the replica has applied everything committed before the call (a
	// read index); used once before answering that an upload is unknown.
	Linearize func(ctx context.Context) error
	// OperDIDs are the server operators' DIDs (--oper-did): they delete any upload.
	OperDIDs []string
	// Now is the clock of budgets and retention (nil: time.Now).
	Now func() time.Time
	// FreeBytes reports the free space of the media directory's file system (nil: statfs).
	FreeBytes func(dir string) (int64, error)
	// Registerer receives the metrics (nil: not registered).
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// Service is the media and keys surface.
type Service struct {
	cfg     Config
	opts    Options
	store   *store
	guard   *fetchguard.Client
	og      *previewCache
	log     *slog.Logger
	metrics metricSet
	spaces  *http.Client
	// addr is the per-address upload budget (budget.go).
	addr      *addressBudget
	freeBytes func(dir string) (int64, error)
	// kick runs a repair pass at once (replicas.go).
	kick chan struct{}
}

// New opens the media directory and builds the service; Mount puts its routes on a REST server.
func New(cfg Config) (*Service, error) {
	opts := cfg.Options.withDefaults()
	if opts.Dir == "" {
		return nil, errors.New("media: no directory")
	}
	if opts.Replicas < 1 || opts.Replicas > fsmmedia.MaxMediaHolders {
		return nil, fmt.Errorf("media: --media-replicas %d: want 1 to %d", opts.Replicas, fsmmedia.MaxMediaHolders)
	}
	st, err := openStore(opts.Dir, opts.DiskBytes)
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, opts: opts, store: st, log: cfg.Logger, og: newPreviewCache(previewCacheSize, previewTTL),
		guard: fetchguard.New(fetchguard.Options{Timeout: opts.FetchTimeout, AllowLoopback: opts.AllowLoopbackFetch,
			UserAgent: "palaver-media/1 (+" + strings.TrimRight(cfg.BaseURL, "/") + ")"}),
		spaces: &http.Client{Timeout: opts.FetchTimeout}, kick: make(chan struct{}, 1),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.addr = newAddressBudget(opts.AddressBytes)
	s.freeBytes = cfg.FreeBytes
	if s.freeBytes == nil {
		s.freeBytes = freeBytes
	}
	s.metrics = newMetrics(cfg.Registerer)
	if opts.Store != "" {
		b, err := openS3(context.Background(), opts.Store, opts.S3)
		if err != nil {
			return nil, err
		}
		st.blobs, st.shared, st.sharedKey = b, true, s.capKey
	}
	return s, nil
}

// EnsureKey installs the capability key through Raft unless the cluster has one: a random key,
// proposed once; the first proposal applied wins on every node.
func (s *Service) EnsureKey(ctx context.Context) error {
	if len(s.capKey()) == fsmmedia.MediaKeySize {
		return nil
	}
	key := make([]byte, fsmmedia.MediaKeySize)
	rand.Read(key)
	if _, err := s.cfg.Proposer.Propose(ctx, fsmmedia.SetMediaKey{Key: key}); err != nil {
		return fmt.Errorf("media capability key: %w", err)
	}
	if len(s.capKey()) != fsmmedia.MediaKeySize {
		return errors.New("media capability key: not installed")
	}
	return nil
}

// clusterLevel is the lowest feature level of the cluster's servers (Config.Levels).
func (s *Service) clusterLevel() int {
	if s.cfg.Levels == nil {
		return fsm.Level
	}
	return s.cfg.Levels.ClusterLevel()
}

// now is the service's clock.
func (s *Service) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return time.Now()
}

func (s *Service) capKey() []byte {
	var key []byte
	s.cfg.State.Read(func(st *fsm.State) { key = fsmmedia.Of(st).Key() })
	return key
}

// capability is the sig of a capability URL: HMAC-SHA256 over the id under the cluster's key.
func capability(key []byte, id string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("palaver-media-cap-v1\x00" + id))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// validCapability checks sig against id in constant time.
func validCapability(key []byte, id, sig string) bool {
	if len(key) == 0 {
		return false
	}
	want := capability(key, id)
	return subtle.ConstantTimeCompare([]byte(want), []byte(sig)) == 1
}

// downloadLimit counts the downloads of callers without a live bearer per client address
// (Options.DownloadsPerMinute; 429 with Retry-After beyond it).
func (s *Service) downloadLimit(r *rest.Server) gin.HandlerFunc {
	if s.opts.DownloadsPerMinute <= 0 {
		return func(*gin.Context) {}
	}
	limiter := rest.NewLimiter(rest.RateLimit{Requests: s.opts.DownloadsPerMinute, Window: time.Minute})
	return func(c *gin.Context) {
		if r.BearerDID(c) != "" {
			return
		}
		if ok, retry := limiter.Allow(c.ClientIP()); !ok {
			s.metrics.served.WithLabelValues("none", "rate_limited").Inc()
			c.Header("Retry-After", strconv.Itoa(retry))
			rest.WriteError(c, http.StatusTooManyRequests, "Too many downloads from your address; retry in "+strconv.Itoa(retry)+" s")
		}
	}
}

// Mount adds the routes to the REST server and describes them in its contract document.
func (s *Service) Mount(r *rest.Server) error {
	e := r.Engine()
	media := r.RateLimit(rest.MediaRoutes)
	records := r.RateLimit(rest.RecordRoutes)
	e.POST("/api/v1/upload", r.RequireBearer(), media, s.upload)
	e.DELETE("/api/v1/media/:id", r.RequireBearer(), records, s.deleteUpload)
	downloads := s.downloadLimit(r)
	e.GET("/api/v1/media/:id/:sig", downloads, s.servePublic)
	e.GET("/api/v1/media/:id/:sig/:filename", downloads, s.serveCapability)
	e.GET("/api/v1/blob", media, s.blob)
	e.GET("/api/v1/og", media, s.preview)
	e.GET("/api/v1/media-space", r.RequireBearer(), s.mediaSpace)
	e.GET("/api/v1/space-media/:ref/:filename", r.RequireBearer(), media, s.spaceMedia)
	e.GET("/api/v1/keys/:did", s.getBundle)
	e.POST("/api/v1/keys", r.RequireBearer(), records, s.putBundle)
	e.GET("/api/v1/channels/:name/groupkeys", r.RequireBearer(), s.getGroupKeys)
	e.POST("/api/v1/channels/:name/groupkeys", r.RequireBearer(), records, s.putGroupKeys)
	if err := r.DescribeRoutes(contractFragment); err != nil {
		return fmt.Errorf("media routes: %w", err)
	}
	return nil
}

// InternalPath is the cluster-plane route of an object's bytes.
const InternalPath = "/internal/v1/media/:id"

// MountInternal adds the cluster-plane routes of the objects' bytes, plaintext over the plane's
// mutual TLS: GET reads a recorded object this node has a copy of (Range honoured), PUT stores
// another server's copy (replicas.go). authenticate admits only servers of the cluster.
func (s *Service) MountInternal(e *gin.Engine, authenticate func(*http.Request) error) {
	auth := func(c *gin.Context) {
		if err := authenticate(c.Request); err != nil {
			c.AbortWithStatusJSON(http.StatusForbidden, gin.H{"error": "not a server of this cluster"})
		}
	}
	e.GET(InternalPath, auth, func(c *gin.Context) {
		id := c.Param("id")
		var obj fsmmedia.MediaObject
		var ok bool
		s.cfg.State.Read(func(st *fsm.State) { obj, ok = fsmmedia.Of(st).Object(id) })
		var r *reader
		if ok {
			r, _ = s.store.open(id)
		}
		if r == nil {
			c.AbortWithStatusJSON(http.StatusNotFound, gin.H{"error": "not held here"})
			return
		}
		s.serveLocal(c, obj, r)
	})
	e.PUT(InternalPath, auth, s.receiveCopy)
}

// propose proposes cmd, answering 503 itself when Raft cannot take it; the caller maps codes.
func (s *Service) propose(c *gin.Context, cmd fsm.Command) (fsm.Result, bool) {
	// Not cancelled with the request: a client that goes away must not make the node believe a
	// change failed that Raft then applies.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), 15*time.Second)
	defer cancel()
	res, err := s.cfg.Proposer.Propose(ctx, cmd)
	if err != nil {
		s.log.Warn("media proposal failed", "command", fmt.Sprintf("%T", cmd), "err", err)
		msg := "The cluster could not record the change now; try again"
		if errors.Is(err, fsm.ErrClusterUpgrading) {
			msg = "The server is being upgraded: this change is possible once every node runs the new version"
		} else {
			c.Header("Retry-After", "2")
		}
		rest.WriteError(c, http.StatusServiceUnavailable, msg)
		return res, false
	}
	return res, true
}
