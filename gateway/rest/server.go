package rest

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

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
	Version     string `json:"version"`
	Node        string `json:"node"`
	Role        string `json:"role"`
	Term        uint64 `json:"term"`
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
	// own origin; http(s)://localhost and 127.0.0.1 on any port always are.
	AllowedOrigins []string
	// Tokens resolves bearer tokens; nil rejects every token.
	Tokens TokenResolver
	// Health feeds /api/v1/health; nil reports only ServerName.
	Health HealthSource
	// Favorites backs /api/v1/favorites; nil answers 503.
	Favorites FavoritesStore
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
}

// Server is the REST server base.
type Server struct {
	cfg     Config
	engine  *gin.Engine
	origins originPolicy
	logger  *slog.Logger
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
	s := &Server{
		cfg:     cfg,
		origins: newOriginPolicy(allowed),
		logger:  logger,
	}
	s.engine = s.newEngine()
	s.mountRoutes()
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
	// Client IP: the TCP peer, unless the peer is a local reverse proxy.
	e.TrustedPlatform = ""
	e.ForwardedByClientIP = true
	e.RemoteIPHeaders = []string{"X-Real-IP", "X-Forwarded-For"}
	if err := e.SetTrustedProxies([]string{"127.0.0.1", "::1"}); err != nil {
		panic("rest: fixed trusted proxy list rejected: " + err.Error())
	}
	e.Use(s.responseHeaders, s.observe, s.cors, s.recovery())
	e.NoRoute(s.notFound)
	e.NoMethod(methodNotAllowed)
	return e
}

func (s *Server) mountRoutes() {
	e := s.engine
	e.GET("/api/v1/health", s.health)
	e.GET("/.well-known/oauth-protected-resource", s.protectedResourceMetadata)
	favorites := e.Group("/api/v1/favorites", s.RequireBearer())
	favorites.GET("", s.getFavorites)
	favorites.PUT("", s.putFavorites)
	if s.cfg.Metrics != nil {
		e.GET("/metrics", gin.WrapH(s.cfg.Metrics.Handler()))
	}
	if s.cfg.IRC != nil {
		e.GET("/irc", s.serveIRC)
	}
}

// Engine is the gin engine, for mounting further routes.
func (s *Server) Engine() *gin.Engine { return s.engine }

// Handler is the server as an http.Handler.
func (s *Server) Handler() http.Handler { return s.engine }

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
