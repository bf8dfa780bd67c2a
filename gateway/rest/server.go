package rest

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/gateway/metrics"
	"github.com/palaver-chat/palaver/gateway/transport"
)

// TokenResolver maps a bearer token to the DID that minted it, for as long
// as the IRC session that minted it lives.
type TokenResolver interface {
	ResolveToken(token string) (did string, ok bool)
}

// HealthSource reports the node's health.
type HealthSource interface {
	Health() Health
}

// Health is the body of GET /api/v1/health.
type Health struct {
	ServerName  string `json:"server_name"`
	Connections int    `json:"connections"`
	Channels    int    `json:"channels"`
	UptimeSecs  int64  `json:"uptime_secs"`
	AV          bool   `json:"av"`
	AVError     string `json:"av_error,omitempty"` // why the forwarding unit is not running
	Version     string `json:"version"`
	Node        string `json:"node"`
	Role        string `json:"role"`
	Term        uint64 `json:"term"`
	// Replication: this node's copy of the other nodes' chat logs (absent when unclustered).
	Replication *Replication `json:"replication,omitempty"`
}

// Replication is how a node's copies of its peers' chat logs stand. OK is false when a peer is
// behind or sent items this node recorded as dead letters.
type Replication struct {
	OK    bool                       `json:"ok"`
	Peers []exchange.PeerReplication `json:"peers"`
}

// FavoritesStore keeps each DID's list of favorite channels.
type FavoritesStore interface {
	Favorites(did string) []string
	// SetFavorites replaces the list and returns it as stored.
	SetFavorites(ctx context.Context, did string, list []string) ([]string, error)
}

// Config is everything the server base needs. Nil interfaces switch the
// matching feature off as documented on each field.
type Config struct {
	ServerName string
	// BaseURL is the public origin, e.g. "http://127.0.0.1:8080", used for
	// absolute URLs. When empty, URLs are derived from each request.
	BaseURL string
	// AllowedOrigins are the cross-origin callers allowed besides BaseURL's
	// own origin; http(s)://localhost and 127.0.0.1 on any port always are
	// for CORS. WebSocket IRC admits BaseURL's origin and these only (see
	// LocalWebSocketOrigins).
	AllowedOrigins []string
	// LocalWebSocketOrigins also admits WebSocket IRC from pages on
	// http(s)://localhost, 127.0.0.1 or [::1] at any port. The node sets it
	// only when it listens on loopback and BaseURL is such a local origin:
	// the pages that can reach it are then local ones.
	LocalWebSocketOrigins bool
	// TrustedProxies are the reverse proxies (IP addresses or CIDR
	// prefixes) whose X-Real-IP and X-Forwarded-For name the client. From
	// any other peer, loopback included, those headers are ignored and the
	// client is the TCP peer. Entries must parse (ValidTrustedProxy).
	TrustedProxies []string
	// HTTPLimits bounds the HTTP server built by HTTPServer.
	HTTPLimits HTTPLimits
	// Tokens resolves bearer tokens; nil rejects every token.
	Tokens TokenResolver
	// Health feeds /api/v1/health; nil reports only ServerName.
	Health HealthSource
	// Favorites backs /api/v1/favorites; nil answers 503.
	Favorites FavoritesStore
	// Passwords backs /api/v1/me/passwords (passwords.go); nil answers 503.
	Passwords PasswordStore
	// Metrics feeds the request metrics and serves /metrics; nil disables both.
	Metrics *metrics.Set
	// IRC handles a WebSocket IRC connection at GET /irc and returns when it
	// ends; nil leaves /irc unmounted.
	IRC func(transport.Conn)
	// IRCLimiter caps concurrent /irc connections per client IP; nil means
	// no cap.
	IRCLimiter *transport.IPLimiter
	// Logger receives request logs at Debug and panics at Error; nil discards.
	Logger *slog.Logger

	// State is the node's replica of the replicated state (an *fsm.Machine).
	// nil reads as an empty state: no channels and no users.
	State StateReader
	// Events is the message store behind history, search, export, evidence
	// and message lookup; nil makes those routes answer 503.
	Events EventStore
	// Resolver resolves DIDs for /actors and for the handles of users; nil
	// resolves nothing (handles are null, /actors knows only live sessions
	// and owned nicks).
	Resolver DIDResolver
	// Linearize, when set, makes ?consistency=strong reads linearizable: it returns once this
	// node's replica has applied everything committed when it was called (a Raft read-index).
	Linearize func(ctx context.Context) error
	// Evidence builds the signed evidence bundles. The evidence route is
	// mounted only when it is set.
	Evidence EvidenceBuilder
	// RateLimits configures the per-client-IP request limiters.
	RateLimits RateLimits
}

// Server is the REST server base.
type Server struct {
	cfg     Config
	engine  *gin.Engine
	origins originPolicy
	logger  *slog.Logger
	// corsExempt holds route templates with their own CORS handling; it is
	// written only before serving starts.
	corsExempt map[string]bool
	// retired holds the retired major versions; written only before serving
	// starts (Retire).
	retired []RetiredVersion
	limits  limiters
	openapi *contractDocument
	pages   pageCache // encoded history pages of the store's current generation
	// actorDetails add other surfaces' fields to /actors/{did} (AddActorDetails).
	actorDetails []ActorDetails
}

// New builds the server and mounts the base routes.
func New(cfg Config) *Server {
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	allowed := cfg.AllowedOrigins
	if cfg.BaseURL != "" {
		allowed = append([]string{cfg.BaseURL}, allowed...)
	}
	if cfg.State == nil {
		cfg.State = emptyState{}
	}
	cfg.HTTPLimits = cfg.HTTPLimits.withDefaults()
	s := &Server{
		cfg:        cfg,
		origins:    newOriginPolicy(allowed),
		logger:     logger,
		corsExempt: make(map[string]bool),
		limits:     newLimiters(cfg.RateLimits, time.Now),
	}
	s.engine = s.newEngine()
	s.mountRoutes()
	s.openapi = newContractDocument(cfg.BaseURL, s.mountedRoutes)
	return s
}

// newEngine builds the gin engine with the cross-cutting middleware.
func (s *Server) newEngine() *gin.Engine {
	gin.SetMode(gin.ReleaseMode) // process-wide, atomic; silences gin's debug output
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.ContextWithFallback = true
	// Client IP: the TCP peer, unless the peer is a configured reverse
	// proxy. gin trusts every peer until told otherwise, so the list is
	// always set, empty when none is configured.
	e.TrustedPlatform = ""
	e.ForwardedByClientIP = len(s.cfg.TrustedProxies) > 0
	e.RemoteIPHeaders = []string{"X-Real-IP", "X-Forwarded-For"}
	if err := e.SetTrustedProxies(s.cfg.TrustedProxies); err != nil {
		// The node validates the list first (ValidTrustedProxy); trust none.
		s.logger.Error("trusted proxy list refused; trusting no proxy", "err", err)
		e.ForwardedByClientIP = false
		_ = e.SetTrustedProxies(nil)
	}
	// Route on the escaped path, so that an encoded "/" (%2F) stays inside
	// a channel name or nick instead of splitting the path; gin unescapes
	// the parameters.
	e.UseRawPath = true
	e.UnescapePathValues = true
	e.Use(s.responseHeaders, s.headerLimit, s.observe, s.cors, s.deprecation, s.recovery(), s.consistency)
	e.NoRoute(s.notFound)
	e.NoMethod(methodNotAllowed)
	return e
}

// mountRoutes mounts every route of the server. Each must be described in
// openapi.yaml; a test walks the route table to hold that.
func (s *Server) mountRoutes() {
	e := s.engine
	e.GET("/api/v1/health", s.health)
	e.GET("/.well-known/oauth-protected-resource", s.protectedResourceMetadata)
	e.GET("/openapi.json", s.openAPIJSON)
	e.GET("/api/v1/openapi.json", s.openAPIJSON)
	e.GET("/api/v1/openapi.yaml", s.openAPIYAML)
	favorites := e.Group("/api/v1/favorites", s.RequireBearer())
	favorites.GET("", s.getFavorites)
	favorites.PUT("", s.putFavorites)
	s.mountPasswords()
	if s.cfg.Metrics != nil {
		e.GET("/metrics", gin.WrapH(s.cfg.Metrics.PublicHandler()))
	}
	if s.cfg.IRC != nil {
		e.GET("/irc", s.serveIRC)
	}

	// The read surface over the replica: anonymous, with an optional bearer
	// that lets members read their restricted channels.
	api := e.Group("/api/v1", s.OptionalBearer())
	api.GET("/channels", s.listChannels)
	api.GET("/channels/:name/history", s.channelHistory)
	api.GET("/channels/:name/export", s.exportChannel)
	api.GET("/channels/:name/topic", s.channelTopic)
	api.GET("/channels/:name/pins", s.channelPins)
	if s.cfg.Evidence != nil {
		api.GET("/channels/:name/evidence", s.channelEvidence)
	}
	api.GET("/history/:channel", s.historyByMsgID)
	api.GET("/pins/:channel", s.pinList)
	api.GET("/search", s.search)
	api.GET("/messages/:msgid", s.message)
	api.GET("/users/:nick", s.user)
	api.GET("/users/:nick/whois", s.whois)
	api.GET("/actors/:did", s.RateLimit(RecordRoutes), s.actor) // each may resolve a DID document
}

// mountedRoutes lists the mounted routes as "METHOD /path/:param".
func (s *Server) mountedRoutes() []string {
	routes := s.engine.Routes()
	out := make([]string, 0, len(routes))
	for _, r := range routes {
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}

// Engine is the gin engine, for mounting further routes.
func (s *Server) Engine() *gin.Engine { return s.engine }

// Handler is the server as an http.Handler.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

func (s *Server) health(c *gin.Context) {
	h := Health{ServerName: s.cfg.ServerName}
	if s.cfg.Health != nil {
		h = s.cfg.Health.Health()
	}
	c.JSON(http.StatusOK, h)
}

// baseURL is the configured public origin, or the request's own.
func (s *Server) baseURL(c *gin.Context) string {
	if s.cfg.BaseURL != "" {
		return s.cfg.BaseURL
	}
	return requestOrigin(c.Request)
}

func requestOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
