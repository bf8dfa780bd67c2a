package mcp

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/gateway/rest"
)

// ProtocolVersion is the latest MCP protocol version this endpoint speaks, the answer to an
// initialize that asks for a version it does not speak.
const ProtocolVersion = "2025-11-25"

// ProtocolVersions are the versions spoken: initialize answers the one asked for when it is
// one of them.
var ProtocolVersions = []string{ProtocolVersion, "2025-06-18"}

// MaxBodyBytes caps a POST /mcp body.
const MaxBodyBytes = 1 << 20

// Bounds of one node's MCP work: a batch holds at most MaxBatchEntries entries, its answers at
// most MaxBatchResponseBytes (entries past it are answered with -32000 instead), and at most
// DefaultMaxConcurrent POSTs run at once (503 and -32000 beyond).
const (
	MaxBatchEntries       = 50
	MaxBatchResponseBytes = 1 << 20
	DefaultMaxConcurrent  = 8
)

// DefaultLimit is the default per-client-address limit on request entries.
var DefaultLimit = rest.RateLimit{Requests: 240, Window: time.Minute}

// Path is where the endpoint is mounted.
const Path = "/mcp"

//go:embed openapi.yaml
var contractFragment []byte

// Config configures the endpoint.
type Config struct {
	// ServerName and Version are reported by initialize.
	ServerName, Version string
	// BaseURL is the public origin, for the links in texts.
	BaseURL string
	// Limit caps request entries per client address (zero fields:
	// DefaultLimit); LimitOff switches it off (benchmarks).
	Limit    rest.RateLimit
	LimitOff bool
	// Logger receives one Debug record per entry; nil discards.
	Logger *slog.Logger
	// MaxConcurrent caps the POSTs served at once on this node (DefaultMaxConcurrent when
	// zero).
	MaxConcurrent int
}

// Server is the MCP endpoint.
type Server struct {
	cfg     Config
	rest    *rest.Server
	limiter *rest.Limiter // nil when off
	logger  *slog.Logger
	// slots holds one token per POST being served.
	slots chan struct{}
	// resources caches each resource's encoded contents, built on first read.
	resources resourceCache
}

// New makes the endpoint; Mount puts it on a REST server.
func New(cfg Config) *Server {
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	s := &Server{cfg: cfg, logger: cfg.Logger, slots: make(chan struct{}, cfg.MaxConcurrent)}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if !cfg.LimitOff {
		limit := cfg.Limit
		if limit.Requests <= 0 {
			limit.Requests = DefaultLimit.Requests
		}
		if limit.Window <= 0 {
			limit.Window = DefaultLimit.Window
		}
		s.limiter = rest.NewLimiter(limit)
	}
	return s
}

// Mount adds POST /mcp, the 405 answers of the other methods and the CORS
// preflight to the REST server, and describes them in its contract
// document. The tools call the REST server's handler.
func (s *Server) Mount(r *rest.Server) error {
	s.rest = r
	e := r.Engine()
	r.ExemptFromCORS(Path)
	e.POST(Path, s.checkOrigin, corsAllowed, s.serve)
	e.OPTIONS(Path, s.checkOrigin, corsAllowed, preflight)
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead} {
		e.Handle(m, Path, s.checkOrigin, corsAllowed, s.notAllowed)
	}
	if err := r.DescribeRoutes(contractFragment); err != nil {
		return fmt.Errorf("mcp routes: %w", err)
	}
	return nil
}

const (
	corsAllowHeaders  = "Content-Type, Authorization, Accept, MCP-Protocol-Version, Mcp-Session-Id, Last-Event-ID"
	corsExposeHeaders = "Mcp-Session-Id, WWW-Authenticate, Retry-After"
)

// checkOrigin refuses a request whose Origin is neither the node's own base URL nor an allowed
// origin (the REST server's WebSocket rule: a DNS-rebinding page names its own host, so the
// Host is never compared), with 403 and the Error object. A request without Origin
// (not from a browser) passes.
func (s *Server) checkOrigin(c *gin.Context) {
	origin := c.GetHeader("Origin")
	if origin == "" || s.rest.AllowsBrowserOrigin(origin) {
		return
	}
	c.Header("Vary", "Origin")
	rest.WriteError(c, http.StatusForbidden, "Requests from origin "+origin+
		" are not allowed on this MCP endpoint (DNS rebinding protection); allowed: this server's base URL and its configured origins")
}

// corsAllowed marks an admitted origin's answers readable, without credentials.
func corsAllowed(c *gin.Context) {
	if c.GetHeader("Origin") != "" {
		h := c.Writer.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
	}
}

func preflight(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	h.Set("Access-Control-Max-Age", "600")
	c.AbortWithStatus(http.StatusNoContent)
}

func (s *Server) notAllowed(c *gin.Context) {
	c.Header("Allow", http.MethodPost)
	rest.WriteError(c, http.StatusMethodNotAllowed,
		"This MCP endpoint takes JSON-RPC over POST only and opens no server-initiated stream; see "+s.cfg.BaseURL+"/.well-known/mcp/server-card.json")
}

// serve answers one POST.
func (s *Server) serve(c *gin.Context) {
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	default:
		c.Header("Retry-After", "1")
		rest.WriteError(c, http.StatusServiceUnavailable, fmt.Sprintf(
			"Server busy: this node answers at most %d MCP requests at once; retry in 1 s", cap(s.slots)))
		return
	}
	version := requestVersion(c)
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			rest.WriteError(c, http.StatusRequestEntityTooLarge, fmt.Sprintf("The body is over %d bytes", MaxBodyBytes))
			return
		}
		rest.WriteError(c, http.StatusBadRequest, "The body could not be read")
		return
	}
	entries, batch, err := parseBody(body)
	if err != nil {
		s.logEntry(c, "", nil, codeParseError)
		s.reply(c, errorResponse(nullID, codeParseError, "Parse error: "+err.Error()))
		return
	}
	if batch && len(entries) == 0 {
		s.logEntry(c, "", nil, codeInvalidRequest)
		s.reply(c, errorResponse(nullID, codeInvalidRequest, "Invalid Request: an empty batch"))
		return
	}
	if len(entries) > MaxBatchEntries {
		s.logEntry(c, "", nil, codeInvalidRequest)
		s.reply(c, errorResponse(nullID, codeInvalidRequest,
			fmt.Sprintf("Invalid Request: a batch of %d entries; at most %d are taken", len(entries), MaxBatchEntries)))
		return
	}
	var out []json.RawMessage
	size := 0
	for _, raw := range entries {
		resp := s.handle(c, raw, version)
		if resp == nil {
			continue
		}
		data, err := json.Marshal(resp)
		if err != nil {
			data, _ = json.Marshal(errorResponse(resp.ID, codeInternalError, "Internal error: the answer could not be encoded"))
		}
		if size+len(data) > MaxBatchResponseBytes {
			data, _ = json.Marshal(&response{JSONRPC: "2.0", ID: resp.ID, Error: &rpcError{Code: codeRateLimited,
				Message: fmt.Sprintf("Response too large: the answers of one request are at most %d bytes; send this entry again in another request", MaxBatchResponseBytes),
				Data:    map[string]int{"status": http.StatusRequestEntityTooLarge, "max_bytes": MaxBatchResponseBytes}}})
		}
		size += len(data)
		out = append(out, data)
	}
	switch {
	case len(out) == 0:
		c.Status(http.StatusAccepted)
		c.Writer.WriteHeaderNow()
	case batch:
		c.Data(http.StatusOK, "application/json", joinArray(out, size))
	default:
		c.Data(http.StatusOK, "application/json", out[0])
	}
}

// joinArray writes encoded answers as one JSON array.
func joinArray(items []json.RawMessage, size int) []byte {
	buf := make([]byte, 0, size+len(items)+2)
	buf = append(buf, '[')
	for i, it := range items {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, it...)
	}
	return append(buf, ']')
}

// requestVersion is the version a request is answered under: its MCP-Protocol-Version when
// that is one spoken here, else "" (2025-06-18's answers; a header naming another version is
// not refused, so that a client probing a newer version with server/discover gets -32601 and
// falls back to initialize).
func requestVersion(c *gin.Context) string {
	if v := c.GetHeader("MCP-Protocol-Version"); slices.Contains(ProtocolVersions, v) {
		return v
	}
	return ""
}

func (s *Server) reply(c *gin.Context, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		rest.WriteError(c, http.StatusInternalServerError, "The answer could not be encoded")
		return
	}
	c.Data(http.StatusOK, "application/json", data)
}

// handle answers one entry; nil for a notification.
func (s *Server) handle(c *gin.Context, raw json.RawMessage, version string) *response {
	call, bad := parseEntry(raw)
	if bad != nil {
		s.logEntry(c, "", bad.ID, bad.Error.Code)
		return bad
	}
	if call.notification() {
		s.logEntry(c, call.method, nil, 0)
		return nil // notifications/initialized and the like need nothing
	}
	if ok, retry := s.limiter.Allow(c.ClientIP()); !ok {
		c.Header("Retry-After", strconv.Itoa(retry))
		s.logEntry(c, call.method, call.id, codeRateLimited)
		return &response{JSONRPC: "2.0", ID: call.id, Error: &rpcError{Code: codeRateLimited,
			Message: fmt.Sprintf("Rate limit exceeded: too many requests from your address; retry in %d s", retry),
			Data:    map[string]int{"status": http.StatusTooManyRequests, "retry_after": retry}}}
	}
	result, rerr := s.dispatch(c, call, version)
	code := 0
	if rerr != nil {
		code = rerr.Code
	}
	s.logEntry(c, call.method, call.id, code)
	if rerr != nil {
		return &response{JSONRPC: "2.0", ID: call.id, Error: rerr}
	}
	return &response{JSONRPC: "2.0", ID: call.id, Result: result}
}

func (s *Server) logEntry(c *gin.Context, method string, id json.RawMessage, code int) {
	ctx := c.Request.Context()
	if !s.logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	s.logger.DebugContext(ctx, "mcp entry", "method", method, "id", string(id), "code", code, "client_ip", c.ClientIP())
}

// dispatch runs a request's method.
func (s *Server) dispatch(c *gin.Context, call call, version string) (any, *rpcError) {
	switch call.method {
	case "initialize":
		return s.initialize(call.params), nil
	case "ping":
		return map[string]any{}, nil
	case "tools/list":
		return map[string]any{"tools": toolList()}, nil
	case "tools/call":
		return s.callTool(c, call.params, version)
	case "resources/list":
		return map[string]any{"resources": resourceList()}, nil
	case "resources/read":
		return s.readResource(c, call.params)
	}
	return nil, &rpcError{Code: codeMethodNotFound, Message: "Method not found: " + call.method}
}

// initialize answers the version the client asked for when it is spoken here, else the latest.
func (s *Server) initialize(raw json.RawMessage) map[string]any {
	var params struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(raw, &params) // a malformed params asks for no version
	version := ProtocolVersion
	if slices.Contains(ProtocolVersions, params.ProtocolVersion) {
		version = params.ProtocolVersion
	}
	return map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{"tools": map[string]any{}, "resources": map[string]any{}},
		"serverInfo": map[string]any{
			"name": "palaver", "title": "Palaver chat on " + s.cfg.ServerName, "version": s.cfg.Version,
			"websiteUrl": s.cfg.BaseURL, "description": "Read-only MCP tools over the chat of " + s.cfg.ServerName,
		},
		"instructions": "Read-only tools over the chat of " + s.cfg.ServerName + ". Public channels need no credentials; " +
			"send Authorization: Bearer <token> (see " + s.cfg.BaseURL + "/auth.md) to read the restricted channels you are a member of. " +
			"Rules and limits: " + s.cfg.BaseURL + "/agents.md.",
	}
}

// restCall runs a GET through the REST server in process, as the caller:
// same Authorization, remote address and forwarding headers, so the REST
// route authorizes, limits and logs it as its own request.
func (s *Server) restCall(c *gin.Context, target string) (int, http.Header, []byte) {
	req, err := http.NewRequestWithContext(c.Request.Context(), http.MethodGet, target, nil)
	if err != nil {
		return http.StatusInternalServerError, http.Header{}, nil
	}
	req.RemoteAddr = c.Request.RemoteAddr
	req.Host = c.Request.Host
	req.TLS = c.Request.TLS
	for _, h := range []string{"Authorization", "X-Real-IP", "X-Forwarded-For", "X-Forwarded-Proto", "User-Agent"} {
		if v := c.Request.Header.Values(h); len(v) > 0 {
			req.Header[h] = v
		}
	}
	req.Header.Set("Accept", "application/json")
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	s.rest.Handler().ServeHTTP(rec, req)
	return rec.status, rec.header, rec.body.Bytes()
}

// recorder is the in-process response of restCall.
type recorder struct {
	header      http.Header
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = status, true
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}
