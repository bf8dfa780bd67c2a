package discovery

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/munnerz/goautoneg"

	"github.com/palaver-chat/palaver/gateway/rest"
	fsmcoord "github.com/palaver-chat/palaver/raft/fsm/coord"
)

//go:embed templates/*.tmpl
var templateFiles embed.FS

//go:embed templates/tos.txt
var defaultTerms []byte

//go:embed openapi.yaml
var contractFragment []byte

var templates = template.Must(template.New("").ParseFS(templateFiles, "templates/*.tmpl"))

// Updated is the date the documents last changed in substance, given as
// the sitemap's lastmod and the catalog's updated: a constant, so that
// every node serves the same bytes across restarts.
const Updated = "2026-11-25"

// MaxTermsBytes bounds an operator's terms file.
const MaxTermsBytes = 256 << 10

// Config is what the documents are made of.
type Config struct {
	// ServerName is the deployment's IRC server name.
	ServerName string
	// BaseURL is the public origin every absolute URL is built on
	// (required).
	BaseURL string
	// Version is the server version, reported by the agent card.
	Version string
	// IRCAddr and TLSAddr are the bound plain and TLS IRC listeners
	// ("host:port", "" when off); the documents name BaseURL's host with
	// their ports.
	IRCAddr, TLSAddr string
	// TLSSelfSigned is true when the TLS listener serves a generated
	// self-signed certificate, which clients must be told to accept.
	TLSSelfSigned bool
	// Terms is the operator's terms of service (Terms); nil serves the
	// built-in terms.
	Terms []byte
	// Limits are the limits agents.md states besides the REST server's own.
	Limits Limits
	// FreeFormSession lists free_form_session in agent.json when an LLM
	// provider is configured and /agent/session is mounted.
	FreeFormSession bool
	// Logger receives build failures; nil discards.
	Logger *slog.Logger
	// Accounts is the replicated state whose hosted accounts get their DID documents at
	// /u/{name}/did.json (accounts.go); nil leaves that route unmounted.
	Accounts rest.StateReader
	// Registration says whether REGISTER creates hosted accounts, for auth.md and agents.md.
	Registration Registration
}

// Registration is what the documents say about hosted accounts.
type Registration struct {
	Enabled           bool
	BeforeConnect     bool
	PerAddressPerHour int
}

// Limits are the node's limits outside the REST server.
type Limits struct {
	// FloodLimits is true when IRC connections have their flood limits.
	FloodLimits bool
	// MaxConnsPerIP caps IRC connections per client address (≤ 0: none).
	MaxConnsPerIP int
	// ChallengeTTL is the SASL challenge lifetime.
	ChallengeTTL time.Duration
	// SigningKeyLifetime is how long a session key counts.
	SigningKeyLifetime time.Duration
	// BatchKeyPairs is the most pairs of a batch key lookup.
	BatchKeyPairs int
	// MCP is the per-address limit on JSON-RPC entries; MCPLimitsOff when
	// switched off. MCPBodyBytes caps a POST /mcp body.
	MCP          rest.RateLimit
	MCPLimitsOff bool
	MCPBodyBytes int
	// Coordination is the budget of the replicated coordination state; zero states none.
	Coordination fsmcoord.CoordBudget
}

// Terms reads an operator's terms of service: UTF-8 text without NUL, at
// most MaxTermsBytes, served byte for byte except that CRLF becomes LF.
func Terms(path string) ([]byte, error) {
	data, err := readBounded(path, MaxTermsBytes)
	if err != nil {
		return nil, fmt.Errorf("terms of service %s: %w", path, err)
	}
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	switch {
	case len(bytes.TrimSpace(data)) == 0:
		return nil, fmt.Errorf("terms of service %s: the file is empty", path)
	case !utf8.Valid(data) || bytes.ContainsAny(data, "\x00\r"):
		return nil, fmt.Errorf("terms of service %s: not plain UTF-8 text with LF line ends", path)
	}
	return data, nil
}

// Service serves the discovery documents.
type Service struct {
	cfg    Config
	rest   *rest.Server
	logger *slog.Logger

	once sync.Once
	docs map[string]document
	err  error
}

// document is one served body.
type document struct {
	contentType string
	body        []byte
}

// routes are the paths served from the built documents (GET / is served by home).
var routes = []string{
	"/llms.txt", "/agents.md", "/AGENTS.md", "/auth.md", "/.well-known/welcome.md", "/index.md", "/tos",
	"/robots.txt", "/sitemap.xml", "/.well-known/ard.json", "/.well-known/ai-catalog.json",
	"/.well-known/agent-card.json", "/.well-known/agent.json", "/.well-known/api-catalog", "/.well-known/mcp",
	"/.well-known/mcp/server-card.json", "/.well-known/http-message-signatures-directory",
}

// New checks the configuration.
func New(cfg Config) (*Service, error) {
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if u, err := url.Parse(cfg.BaseURL); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("discovery: base URL %q is not an http(s) origin", cfg.BaseURL)
	}
	if cfg.Terms == nil {
		cfg.Terms = defaultTerms
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, logger: logger}, nil
}

// Mount adds the discovery routes to the REST server and describes them
// in its contract document. The documents are built on first request,
// from the contract document of every route mounted by then.
func (s *Service) Mount(r *rest.Server) error {
	s.rest = r
	e := r.Engine()
	for _, p := range routes {
		e.GET(p, s.serve)
	}
	e.GET("/", s.home)
	if s.cfg.Accounts != nil {
		e.GET("/u/:name/did.json", s.accountDocument)
	}
	if err := r.DescribeRoutes(contractFragment); err != nil {
		return fmt.Errorf("discovery routes: %w", err)
	}
	return nil
}

func (s *Service) serve(c *gin.Context) {
	docs, ok := s.documents(c)
	if !ok {
		return
	}
	d := docs[c.FullPath()]
	c.Data(http.StatusOK, d.contentType, d.body)
}

// home answers GET /: index.md for clients that prefer markdown (or state
// no preference), the same content as HTML for browsers.
func (s *Service) home(c *gin.Context) {
	docs, ok := s.documents(c)
	if !ok {
		return
	}
	c.Header("Vary", "Accept")
	key := "/index.md"
	if goautoneg.Negotiate(c.GetHeader("Accept"), []string{"text/markdown", "text/html"}) == "text/html" {
		key = "/"
	}
	d := docs[key]
	c.Data(http.StatusOK, d.contentType, d.body)
}

func (s *Service) documents(c *gin.Context) (map[string]document, bool) {
	s.once.Do(func() { s.docs, s.err = s.build() })
	if s.err != nil {
		s.logger.ErrorContext(c.Request.Context(), "building the discovery documents failed", "err", s.err)
		rest.WriteError(c, http.StatusInternalServerError, "The discovery documents could not be built")
		return nil, false
	}
	return s.docs, true
}

const (
	markdownType = "text/markdown; charset=utf-8"
	textType     = "text/plain; charset=utf-8"
	jsonType     = "application/json"
)

// build makes every document from the served contract document.
func (s *Service) build() (map[string]document, error) {
	if s.rest == nil {
		return nil, errors.New("discovery: not mounted")
	}
	contract, err := s.rest.ContractJSON()
	if err != nil {
		return nil, err
	}
	ops, err := routeTable(contract)
	if err != nil {
		return nil, err
	}
	v := s.view(ops)
	docs := map[string]document{"/tos": {textType, s.cfg.Terms}}
	for path, tmpl := range map[string]string{
		"/llms.txt": "llms.txt.tmpl", "/agents.md": "agents.md.tmpl", "/auth.md": "auth.md.tmpl",
		"/.well-known/welcome.md": "welcome.md.tmpl", "/index.md": "index.md.tmpl",
	} {
		var b bytes.Buffer
		if err := templates.ExecuteTemplate(&b, tmpl, v); err != nil {
			return nil, fmt.Errorf("discovery: %s: %w", path, err)
		}
		docs[path] = document{markdownType, b.Bytes()}
	}
	docs["/AGENTS.md"] = docs["/agents.md"]
	page, err := renderHTML(s.cfg.ServerName, docs["/index.md"].body)
	if err != nil {
		return nil, err
	}
	docs["/"] = document{"text/html; charset=utf-8", page}
	docs["/robots.txt"] = document{textType, robots(v.Base)}
	sitemap, err := sitemapXML(v.Base, v.ops)
	if err != nil {
		return nil, err
	}
	docs["/sitemap.xml"] = document{"application/xml", sitemap}
	for path, body := range s.catalogs(v) {
		encoded, err := json.MarshalIndent(body, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("discovery: encoding %s: %w", path, err)
		}
		docs[path] = document{jsonType, append(encoded, '\n')}
	}
	docs["/.well-known/ai-catalog.json"] = docs["/.well-known/ard.json"]
	for _, p := range routes {
		if _, ok := docs[p]; !ok {
			return nil, fmt.Errorf("discovery: no document for %s", p)
		}
	}
	return docs, nil
}

// view is what the templates read.
type view struct {
	Name, ServerName, Base string
	Transports             string
	LoginFlags             string
	SelfSigned             bool
	ChallengeSecs          int64
	HasMCP, HasAgentJSON   bool
	HasPasswords           bool         // the client-password routes are mounted (auth.md)
	Registration           Registration // hosted accounts (auth.md, agents.md)
	Groups                 []group
	LimitRows              []limitRow
	Reads                  string
	HasVerify              bool
	Retired                []retired
	L                      limitsView
	ops                    table
}

type limitsView struct {
	Limits
	REST rest.Limits
}

type limitRow struct{ What, Limit string }

type group struct {
	Title string
	Ops   []Operation
}

type retired struct{ Prefix, Deprecated, Sunset, Link string }

func (s *Service) view(ops table) view {
	v := view{
		Name: "Palaver", ServerName: s.cfg.ServerName, Base: s.cfg.BaseURL, ops: ops,
		ChallengeSecs: int64(s.cfg.Limits.ChallengeTTL / time.Second),
		HasMCP:        ops.has("POST", "/mcp"),
		HasAgentJSON:  ops.has("GET", "/.well-known/agent.json") && len(ops.withPrefix("/agent/tools/")) > 0,
		L:             limitsView{Limits: s.cfg.Limits, REST: s.rest.Limits()},
	}
	host := s.hostname()
	var transports []string
	if p := port(s.cfg.IRCAddr); p != "" {
		transports = append(transports, "plain TCP at `"+net.JoinHostPort(host, p)+"`")
	}
	if p := port(s.cfg.TLSAddr); p != "" {
		transports = append(transports, "TLS at `"+net.JoinHostPort(host, p)+"`")
	}
	if ops.has("GET", "/irc") {
		transports = append(transports, "WebSocket at `"+wsURL(s.cfg.BaseURL)+"/irc`")
	}
	v.Transports = strings.Join(transports, ", ")
	switch {
	case port(s.cfg.TLSAddr) != "":
		v.SelfSigned = s.cfg.TLSSelfSigned
		v.LoginFlags = "--server " + net.JoinHostPort(host, port(s.cfg.TLSAddr))
		if s.cfg.TLSSelfSigned {
			v.LoginFlags += " --insecure" // the generated certificate verifies against nothing
		}
	case port(s.cfg.IRCAddr) != "":
		v.LoginFlags = "--server " + net.JoinHostPort(host, port(s.cfg.IRCAddr)) + " --tls=false"
	default:
		v.LoginFlags = "--ws " + wsURL(s.cfg.BaseURL) + "/irc"
	}
	v.Groups = groupRoutes(ops)
	v.LimitRows = append(limitRows(ops, v.L, v.HasMCP), loginRows(s.cfg.Registration)...)
	v.HasPasswords, v.Registration = ops.has("POST", "/api/v1/me/passwords"), s.cfg.Registration
	v.HasVerify = ops.has("GET", "/api/v1/verify/{msgid}")
	v.Reads = readsOf(ops)
	for _, r := range s.rest.RetiredVersions() {
		v.Retired = append(v.Retired, retired{r.Prefix, r.Deprecated.UTC().Format(time.DateOnly), r.Sunset.UTC().Format(time.DateOnly), r.Link})
	}
	return v
}

// groupRoutes sorts the route table into the index's sections.
func groupRoutes(ops table) []group {
	titles := []string{"API (/api/v1)", "MCP", "Agent assistance", "Documents and discovery", "Transports, metrics and node-to-node"}
	byTitle := map[string][]Operation{}
	for _, o := range ops {
		var t string
		switch {
		case strings.HasPrefix(o.Path, "/api/"):
			t = titles[0]
		case o.Path == "/mcp":
			t = titles[1]
		case strings.HasPrefix(o.Path, "/agent/"):
			t = titles[2]
		case o.Path == "/" || o.Path == "/tos" || strings.HasPrefix(o.Path, "/.well-known/") || strings.Contains(o.Path, "."):
			t = titles[3]
		default:
			t = titles[4]
		}
		byTitle[t] = append(byTitle[t], o)
	}
	var out []group
	for _, t := range titles {
		if len(byTitle[t]) > 0 {
			out = append(out, group{Title: t, Ops: byTitle[t]})
		}
	}
	return out
}

func (s *Service) hostname() string {
	u, _ := url.Parse(s.cfg.BaseURL)
	return u.Hostname()
}

// port is the port of a "host:port" listener address, "" when off.
func port(addr string) string {
	if addr == "" {
		return ""
	}
	_, p, err := net.SplitHostPort(addr)
	if err != nil || p == "0" {
		return ""
	}
	return p
}

// wsURL is the WebSocket origin of an http(s) base URL.
func wsURL(base string) string {
	if rest, ok := strings.CutPrefix(base, "https://"); ok {
		return "wss://" + rest
	}
	return "ws://" + strings.TrimPrefix(base, "http://")
}

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, errors.New("larger than " + strconv.FormatInt(limit, 10) + " bytes")
	}
	return data, nil
}
