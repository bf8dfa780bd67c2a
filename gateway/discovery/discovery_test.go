package discovery_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/goccy/go-yaml"

	"github.com/palaver-chat/palaver/gateway/discovery"
	"github.com/palaver-chat/palaver/gateway/mcp"
	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/gateway/rest/contracttest"
	"github.com/palaver-chat/palaver/raft/fsm"
	fsmcoord "github.com/palaver-chat/palaver/raft/fsm/coord"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

// server is a REST server with the discovery documents (and, when asked,
// the MCP endpoint and extra routes) on a loopback socket.
type server struct {
	url  string
	rest *rest.Server
}

type options struct {
	noMCP  bool
	terms  []byte
	extra  func(r *rest.Server) // mounts more routes before the documents are built
	limits discovery.Limits
	reg    discovery.Registration
}

// accountsState is the state behind /u/{name}/did.json in these tests: the hosted account bar
// (did:web:docs.test:u:bar) with one live and one retired session key.
func accountsState(t *testing.T) *fsmtest.Machine {
	t.Helper()
	m := fsmtest.New()
	did := fsm.HostedAccountDID("docs.test", "Bar")
	m.MustOK(t,
		fsm.RegisterAccount{Name: "Bar", DID: did, Salt: bytes.Repeat([]byte{1}, 16), Iterations: 4096,
			StoredKey: bytes.Repeat([]byte{2}, 32), ServerKey: bytes.Repeat([]byte{3}, 32)},
		fsm.RegisterKey{DID: did, KID: "k-live", PublicKey: bytes.Repeat([]byte{4}, 32), Source: "local-session"},
		fsm.RegisterKey{DID: did, KID: "k-old", PublicKey: bytes.Repeat([]byte{5}, 32), Source: "local-session"},
		fsm.RetireKey{DID: did, KID: "k-old"},
	)
	return m
}

func newServer(t *testing.T, o options) *server {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	r := rest.New(rest.Config{ServerName: "docs.test", BaseURL: base})
	if !o.noMCP {
		if err := mcp.New(mcp.Config{ServerName: "docs.test", BaseURL: base}).Mount(r); err != nil {
			t.Fatal(err)
		}
	}
	if o.limits == (discovery.Limits{}) {
		o.limits = discovery.Limits{FloodLimits: true, MaxConnsPerIP: 20, ChallengeTTL: time.Minute, SigningKeyLifetime: 90 * 24 * time.Hour,
			BatchKeyPairs: 50, MCP: mcp.DefaultLimit, MCPBodyBytes: mcp.MaxBodyBytes, Coordination: fsmcoord.DefaultCoordBudget}
	}
	d, err := discovery.New(discovery.Config{ServerName: "docs.test", BaseURL: base, Version: "0.1.0",
		IRCAddr: "127.0.0.1:6667", TLSAddr: "0.0.0.0:6697", TLSSelfSigned: true, Terms: o.terms, Limits: o.limits,
		Accounts: accountsState(t), Registration: o.reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Mount(r); err != nil {
		t.Fatal(err)
	}
	if o.extra != nil {
		o.extra(r)
	}
	srv.Config.Handler = r.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	return &server{url: srv.URL, rest: r}
}

func (s *server) get(t *testing.T, path string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// TestDocuments: every discovery route answers 200 with its media type and
// shape, the security and CORS headers, and a body that matches the
// contract document.
func TestDocuments(t *testing.T) {
	s := newServer(t, options{})
	contract := contracttest.Fetch(t, s.url)
	b := s.url
	tests := []struct {
		path, contentType string
		contains          []string
	}{
		{"/llms.txt", "text/markdown; charset=utf-8", []string{"# Palaver", b + "/api/v1/openapi.json", b + "/api/v1/channels", "`POST /mcp`", "`GET /api/v1/health` (none)", "No version is deprecated at present."}},
		{"/agents.md", "text/markdown; charset=utf-8", []string{"## Restricted channels", "## Limits", "## Signing", "| `limit` on history (`/api/v1/channels/{name}/history`) | default 50, at most 200 |",
			"| MCP requests | 240 JSON-RPC requests per 60 s per client address", "| IRC connections | 20 at once", "+freeq.at/sig",
			"| coordination state per identity (the tasks, task events, evidence, ACT actions and events it files) | 1 MiB and 2000 items",
			"| worst case, however many identities and addresses | 64 identities at their budget fill the server's; at most 80 MiB of coordination state (160 MiB in memory) |"}},
		{"/AGENTS.md", "text/markdown; charset=utf-8", []string{"## Restricted channels"}},
		{"/auth.md", "text/markdown; charset=utf-8", []string{"C: AUTHENTICATE ATPROTO-CHALLENGE", "API-BEARER", "0xed 0x01", b + "/api/v1/favorites", "TLS at `127.0.0.1:6697`", "palaver login --server 127.0.0.1:6697 --insecure --hold 1h"}},
		{"/.well-known/welcome.md", "text/markdown; charset=utf-8", []string{"## requirements", "## endpoints", "## enrollment flow", "## deviations",
			"no `POST /api/signup`", "no DPoP", "never sent to this server", "EdDSA", "RSA is not accepted"}},
		{"/index.md", "text/markdown; charset=utf-8", []string{"# docs.test", b + "/llms.txt"}},
		{"/tos", "text/plain; charset=utf-8", []string{"Palaver — terms of service\nversion 1\n"}},
		{"/robots.txt", "text/plain; charset=utf-8", []string{"User-agent: *\nAllow: /", "User-agent: GPTBot", "Sitemap: " + b + "/sitemap.xml"}},
		{"/sitemap.xml", "application/xml", []string{"<loc>" + b + "/llms.txt</loc>", "<lastmod>", "<changefreq>"}},
		{"/.well-known/ard.json", "application/json", []string{`"trustManifest"`, `"type": "mcp"`, `"verification": "` + b + `/api/v1/verify/{msgid}"`}},
		{"/.well-known/ai-catalog.json", "application/json", []string{`"trustManifest"`}},
		{"/.well-known/agent-card.json", "application/json", []string{`"skills"`, `"join_and_speak"`, `"securitySchemes"`}},
		{"/.well-known/agent.json", "application/json", []string{`"capabilities": []`}},
		{"/.well-known/api-catalog", "application/json", []string{`"linkset"`, `"service-desc"`, b + "/api/v1/openapi.json", b + "/api/v1/health"}},
		{"/.well-known/mcp", "application/json", []string{`"url": "` + b + `/mcp"`, `"transport": "streamable-http"`, `"protocolVersion": "2025-11-25"`}},
		{"/.well-known/mcp/server-card.json", "application/json", []string{`"published": false`, `"protocolVersion": "2025-11-25"`}},
		{"/.well-known/http-message-signatures-directory", "application/json", []string{`"keys": []`}},
		{"/.well-known/oauth-protected-resource", "application/json; charset=utf-8", []string{`"resource_documentation":"` + b + `/auth.md"`}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			origin := "http://localhost:5173"
			resp, body := s.get(t, tt.path, "Origin", origin)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != tt.contentType {
				t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			for _, want := range tt.contains {
				if !bytes.Contains(body, []byte(want)) {
					t.Errorf("no %q in\n%s", want, body)
				}
			}
			if bytes.Contains(body, []byte("irc.freeq.at")) || bytes.Contains(body, []byte("\r")) {
				t.Error("a foreign origin or a CR in the document")
			}
			for h, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
				"Referrer-Policy": "strict-origin-when-cross-origin", "Access-Control-Allow-Origin": origin} {
				if resp.Header.Get(h) != want {
					t.Errorf("%s = %q", h, resp.Header.Get(h))
				}
			}
			if resp.Header.Get("Content-Security-Policy") == "" || resp.Header.Get("Strict-Transport-Security") == "" {
				t.Error("security headers missing")
			}
			if strings.HasPrefix(tt.contentType, "application/json") && !json.Valid(body) {
				t.Fatal("invalid JSON")
			}
			contract.Check(t, http.MethodGet, s.url+tt.path, resp, body)
		})
	}
}

// TestHome: GET / is index.md unless the client prefers HTML.
func TestHome(t *testing.T) {
	s := newServer(t, options{})
	_, index := s.get(t, "/index.md")
	tests := []struct{ accept, contentType string }{
		{"text/markdown", "text/markdown; charset=utf-8"},
		{"", "text/markdown; charset=utf-8"},
		{"*/*", "text/markdown; charset=utf-8"},
		{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "text/html; charset=utf-8"},
		{"text/markdown, text/html;q=0.5", "text/markdown; charset=utf-8"},
	}
	for _, tt := range tests {
		resp, body := s.get(t, "/", "Accept", tt.accept)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != tt.contentType || resp.Header.Get("Vary") != "Accept" {
			t.Fatalf("Accept %q: %d %q Vary %q", tt.accept, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Vary"))
		}
		if strings.HasPrefix(tt.contentType, "text/markdown") && !bytes.Equal(body, index) {
			t.Errorf("Accept %q: not index.md", tt.accept)
		}
		if strings.HasPrefix(tt.contentType, "text/html") &&
			(!bytes.Contains(body, []byte("<h1>docs.test</h1>")) || !bytes.Contains(body, []byte(`<a href="`+s.url+`/llms.txt">llms.txt</a>`))) {
			t.Errorf("HTML page:\n%s", body)
		}
	}
}

// TestDerivedFromTheRouteTable: the indexes follow what is mounted.
func TestDerivedFromTheRouteTable(t *testing.T) {
	tool := `
paths:
  /agent/tools/diagnose_sync:
    post:
      operationId: diagnoseSync
      summary: Server-to-server divergence.
      responses:
        '200': {description: An evidence bundle.}
`
	withTool := newServer(t, options{extra: func(r *rest.Server) {
		r.Engine().POST("/agent/tools/diagnose_sync", func(c *gin.Context) { c.JSON(200, gin.H{}) })
		if err := r.DescribeRoutes([]byte(tool)); err != nil {
			t.Fatal(err)
		}
	}})
	plain := newServer(t, options{noMCP: true})

	var agent struct {
		Capabilities       []string `json:"capabilities"`
		AssistanceEndpoint string   `json:"assistance_endpoint"`
	}
	_, body := withTool.get(t, "/.well-known/agent.json")
	if err := json.Unmarshal(body, &agent); err != nil || !slices.Equal(agent.Capabilities, []string{"diagnose_sync"}) ||
		agent.AssistanceEndpoint != withTool.url+"/agent/tools" {
		t.Fatalf("agent.json with a tool: %s", body)
	}
	_, body = plain.get(t, "/.well-known/agent.json")
	if err := json.Unmarshal(body, &agent); err != nil || agent.Capabilities == nil || len(agent.Capabilities) != 0 || strings.Contains(string(body), "assistance_endpoint") {
		t.Fatalf("agent.json without tools: %s", body)
	}
	if _, llms := withTool.get(t, "/llms.txt"); !strings.Contains(string(llms), "`POST /agent/tools/diagnose_sync` (none): Server-to-server divergence.") {
		t.Errorf("llms.txt lacks the tool:\n%s", llms)
	}

	// Without MCP nothing names it.
	for _, p := range []string{"/llms.txt", "/.well-known/ard.json", "/agents.md", "/.well-known/welcome.md"} {
		if _, body := plain.get(t, p); strings.Contains(string(body), "/mcp\"") || strings.Contains(string(body), "POST /mcp") || strings.Contains(string(body), plain.url+"/mcp") {
			t.Errorf("%s names /mcp on a server without it", p)
		}
	}
	var mcpDoc map[string]any
	if _, body := plain.get(t, "/.well-known/mcp"); json.Unmarshal(body, &mcpDoc) != nil || mcpDoc["mcp"] != nil {
		t.Errorf("/.well-known/mcp without MCP: %s", body)
	}

	// Every listed route is mounted, and every mounted one is listed.
	_, llms := withTool.get(t, "/llms.txt")
	listed := map[string]bool{}
	for _, line := range strings.Split(string(llms), "\n") {
		if rest, ok := strings.CutPrefix(line, "- `"); ok {
			if route, _, ok := strings.Cut(rest, "`"); ok && strings.Contains(route, " /") {
				listed[route] = true
			}
		}
	}
	for _, r := range withTool.rest.Engine().Routes() {
		key := r.Method + " " + rest.OpenAPIPath(r.Path)
		if !listed[key] {
			t.Errorf("llms.txt does not list %s", key)
		}
		delete(listed, key)
	}
	if len(listed) > 0 {
		t.Errorf("llms.txt lists unmounted routes %v", listed)
	}

	// The sitemap holds absolute URLs of anonymous, parameterless GET routes only.
	_, body = withTool.get(t, "/sitemap.xml")
	var set struct {
		URLs []struct {
			Loc        string `xml:"loc"`
			LastMod    string `xml:"lastmod"`
			ChangeFreq string `xml:"changefreq"`
		} `xml:"url"`
	}
	if err := xml.Unmarshal(body, &set); err != nil || len(set.URLs) < 10 {
		t.Fatalf("%v: %s", err, body)
	}
	for _, u := range set.URLs {
		p := strings.TrimPrefix(u.Loc, withTool.url)
		if p == u.Loc || strings.ContainsAny(p, "{}") || p == "/mcp" || p == "/api/v1/favorites" || strings.HasPrefix(p, "/agent/") || u.LastMod != discovery.Updated || u.ChangeFreq == "" {
			t.Errorf("sitemap entry %+v", u)
		}
		// A page: a plain GET of the listed URL answers 200.
		if resp, _ := withTool.get(t, p); resp.StatusCode != http.StatusOK {
			t.Errorf("sitemap lists %s, which answers %d to a plain GET", p, resp.StatusCode)
		}
	}
	if strings.Contains(string(body), "/api/v1/search<") {
		t.Error("the sitemap lists /api/v1/search, which needs its query parameters")
	}
}

// TestDescribedAndMounted: the fragment describes exactly the routes Mount
// adds, and operation ids stay unique across the merged document.
func TestDescribedAndMounted(t *testing.T) {
	s := newServer(t, options{})
	if missing, err := s.rest.UndocumentedRoutes(); err != nil || len(missing) != 0 {
		t.Fatalf("undocumented: %v %v", missing, err)
	}
	_, body := s.get(t, "/api/v1/openapi.json")
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for path, item := range doc.Paths {
		for m, op := range item {
			if op.OperationID == "" || ids[op.OperationID] {
				t.Errorf("%s %s: operationId %q missing or repeated", m, path, op.OperationID)
			}
			ids[op.OperationID] = true
		}
	}
	for _, path := range []string{"/", "/llms.txt", "/tos", "/.well-known/mcp/server-card.json", "/.well-known/agent.json"} {
		if _, ok := doc.Paths[path]["get"]; !ok {
			t.Errorf("GET %s is not in the served document", path)
		}
	}
	if mounted := len(s.rest.Engine().Routes()); mounted != len(ids) {
		t.Errorf("%d routes mounted, %d operations documented", mounted, len(ids))
	}
	// The served document is pruned to mounted routes, so read the fragments themselves: each
	// operation they describe is mounted.
	mounted := map[string]bool{}
	for _, r := range s.rest.Engine().Routes() {
		mounted[strings.ToLower(r.Method)+" "+rest.OpenAPIPath(r.Path)] = true
	}
	for _, file := range []string{"openapi.yaml", "../mcp/openapi.yaml"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := yaml.YAMLToJSON(src)
		if err != nil {
			t.Fatal(err)
		}
		var frag struct {
			Paths map[string]map[string]any `json:"paths"`
		}
		if err := json.Unmarshal(raw, &frag); err != nil || len(frag.Paths) == 0 {
			t.Fatalf("%s: %v", file, err)
		}
		for path, item := range frag.Paths {
			for m := range item {
				if !mounted[m+" "+path] {
					t.Errorf("%s describes %s %s, which is not mounted", file, m, path)
				}
			}
		}
	}
}

func TestTerms(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, content, want, wantErr string
	}{
		{"plain", "Our terms\nversion 3\n", "Our terms\nversion 3\n", ""},
		{"CRLF becomes LF", "Our terms\r\nversion 3\r\n", "Our terms\nversion 3\n", ""},
		{"empty", " \n", "", "empty"},
		{"binary", "a\x00b", "", "plain UTF-8"},
		{"not UTF-8", "caf\xe9", "", "plain UTF-8"},
		{"a bare CR", "a\rb", "", "plain UTF-8"},
		{"too large", strings.Repeat("x", discovery.MaxTermsBytes+1), "", "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := discovery.Terms(write(tt.name, tt.content))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("%q %v", got, err)
			}
			s := newServer(t, options{terms: got})
			if _, body := s.get(t, "/tos"); string(body) != tt.want {
				t.Fatalf("served %q", body)
			}
		})
	}
	if _, err := discovery.Terms(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file was accepted")
	}
	// The built-in terms are the same bytes on every server.
	_, a := newServer(t, options{}).get(t, "/tos")
	_, b := newServer(t, options{noMCP: true}).get(t, "/tos")
	if !bytes.Equal(a, b) || !bytes.HasPrefix(a, []byte("Palaver — terms of service\nversion 1\n")) {
		t.Fatalf("built-in terms differ or changed: %q", a)
	}
}

func TestNewRefusesABadBaseURL(t *testing.T) {
	for _, base := range []string{"", "127.0.0.1:8080", "ftp://x", "http://"} {
		if _, err := discovery.New(discovery.Config{BaseURL: base}); err == nil {
			t.Errorf("base URL %q accepted", base)
		}
	}
}
