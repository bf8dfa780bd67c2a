package node

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgotransport "github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/mr-tron/base58"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/gateway/mcp"
)

// TestDiscoveryRoutes: a node answers every route of the contract's discovery table with its
// status and media type.
func TestDiscoveryRoutes(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	base := "http://" + n.HTTPAddr()
	tests := []struct{ method, path, accept, contentType string }{
		{"GET", "/api/v1/openapi.json", "", "application/json"},
		{"GET", "/openapi.json", "", "application/json"},
		{"GET", "/api/v1/openapi.yaml", "", "application/yaml"},
		{"GET", "/.well-known/agent.json", "", "application/json"},
		{"GET", "/llms.txt", "", "text/markdown; charset=utf-8"},
		{"GET", "/agents.md", "", "text/markdown; charset=utf-8"},
		{"GET", "/AGENTS.md", "", "text/markdown; charset=utf-8"},
		{"GET", "/auth.md", "", "text/markdown; charset=utf-8"},
		{"GET", "/.well-known/welcome.md", "", "text/markdown; charset=utf-8"},
		{"GET", "/tos", "", "text/plain; charset=utf-8"},
		{"GET", "/index.md", "", "text/markdown; charset=utf-8"},
		{"GET", "/", "text/markdown", "text/markdown; charset=utf-8"},
		{"GET", "/", "text/html", "text/html; charset=utf-8"},
		{"GET", "/robots.txt", "", "text/plain; charset=utf-8"},
		{"GET", "/sitemap.xml", "", "application/xml"},
		{"GET", "/.well-known/ard.json", "", "application/json"},
		{"GET", "/.well-known/ai-catalog.json", "", "application/json"},
		{"GET", "/.well-known/agent-card.json", "", "application/json"},
		{"GET", "/.well-known/api-catalog", "", "application/json"},
		{"GET", "/.well-known/mcp", "", "application/json"},
		{"GET", "/.well-known/mcp/server-card.json", "", "application/json"},
		{"GET", "/.well-known/oauth-protected-resource", "", "application/json; charset=utf-8"},
		{"GET", "/.well-known/http-message-signatures-directory", "", "application/json"},
		{"GET", "/api/v1/health", "", "application/json; charset=utf-8"},
		{"GET", "/api/v1/signing-key", "", "application/json; charset=utf-8"},
	}
	for _, tt := range tests {
		req, _ := http.NewRequestWithContext(testCtx(t), tt.method, base+tt.path, nil)
		if tt.accept != "" {
			req.Header.Set("Accept", tt.accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != tt.contentType || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s %s (Accept %q): %d %q", tt.method, tt.path, tt.accept, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	resp, body := httpDo(t, "GET", base+"/mcp", "", nil)
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" || !json.Valid(body) {
		t.Errorf("GET /mcp: %d %q %s", resp.StatusCode, resp.Header.Get("Allow"), body)
	}
	// agents.md states the coordination limits.
	_, doc := httpDo(t, "GET", base+"/agents.md", "", nil)
	for _, want := range []string{"| spawned agents (`AGENT SPAWN`) | 16 at a time per parent DID", "| agent manifests | one per DID", "`FAIL TAGMSG WRONG_SENDER`"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("agents.md lacks %q", want)
		}
	}
}

// TestAuthWalkthroughWorksVerbatim follows the node's own /auth.md: mint a did:key as it says,
// send its client lines over the transport it names, wait for its server lines, take the token
// and call the bearer route it shows.
func TestAuthWalkthroughWorksVerbatim(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	_, doc := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/auth.md", "", nil)
	text := string(doc)
	if !strings.Contains(text, "plain TCP at `"+n.IRCAddr()+"`") {
		t.Fatalf("auth.md does not name the IRC address %s", n.IRCAddr())
	}

	// Steps 1 and 2: the key and its DID, as written.
	if !strings.Contains(text, "`did:key:z` followed by the base58btc (Bitcoin alphabet) encoding of the\n   bytes `0xed 0x01` and then the 32-byte public key") {
		t.Fatal("auth.md no longer describes the did:key encoding this test follows")
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	did := "did:key:z" + base58.Encode(append([]byte{0xed, 0x01}, pub...))

	// Steps 3 to 5: the transcript.
	var transcript []string
	inBlock := false
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "```text":
			inBlock = true
		case inBlock && line == "```":
			inBlock = false
		case inBlock:
			transcript = append(transcript, line)
		}
	}
	if len(transcript) < 10 {
		t.Fatalf("no transcript in auth.md:\n%s", text)
	}
	c := dial(t, n)
	var challenge, token string
	placeholder := regexp.MustCompile(`^<[a-z-]+>$`)
	for _, line := range transcript {
		dir, body, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("transcript line %q", line)
		}
		switch dir {
		case "C":
			if strings.Contains(body, "<response>") {
				raw, err := base64.RawURLEncoding.DecodeString(challenge)
				if err != nil {
					t.Fatalf("challenge %q: %v", challenge, err)
				}
				resp, _ := json.Marshal(map[string]string{"did": did, "method": "crypto",
					"signature": base64.RawURLEncoding.EncodeToString(ed25519.Sign(priv, raw))})
				body = strings.Replace(body, "<response>", base64.RawURLEncoding.EncodeToString(resp), 1)
			}
			if err := c.Send(body); err != nil {
				t.Fatal(err)
			}
		case "S":
			words := strings.Fields(body)
			m, err := c.Expect(testCtx(t), func(m ircmsg.Message) bool {
				if m.Command != words[0] {
					return false
				}
				raw := m.String()
				for _, w := range words[1:] {
					w = strings.TrimPrefix(w, ":")
					if w != "..." && !placeholder.MatchString(w) && !strings.Contains(raw, strings.ReplaceAll(w, "<did>", did)) {
						return false
					}
				}
				return true
			})
			if err != nil {
				t.Fatalf("waiting for %q: %v\nseen: %v", body, err, lastSeen(c))
			}
			switch {
			case strings.Contains(body, "<challenge>"):
				challenge = m.Param(0)
			case strings.Contains(body, "API-BEARER <token>"):
				token = strings.TrimPrefix(m.Param(1), "API-BEARER ")
			case strings.Contains(body, "<did>") && !strings.Contains(m.String(), did):
				t.Fatalf("logged in as something else: %s", m)
			}
		default:
			t.Fatalf("transcript line %q", line)
		}
	}
	if token == "" {
		t.Fatal("no token")
	}

	// Step 6: the bearer route, exactly as shown.
	curl := regexp.MustCompile(`curl -H "Authorization: Bearer <token>" (\S+)`).FindStringSubmatch(text)
	if curl == nil {
		t.Fatal("auth.md shows no bearer call")
	}
	resp, body := httpDo(t, "GET", curl[1], token, nil)
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != `{"favorites":[]}` {
		t.Fatalf("%s: %d %s", curl[1], resp.StatusCode, body)
	}
	if resp, _ := httpDo(t, "GET", curl[1], "", nil); resp.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(text, resp.Header.Get("WWW-Authenticate")) {
		t.Fatalf("without a token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

// mcpFixture is a node with a public and an invite-only channel, each with a message, and the
// bearer token of their member.
type mcpFixture struct {
	endpoint, token, msgid string
}

func newMCPFixture(t *testing.T) mcpFixture {
	t.Helper()
	n := startNode(t, t.TempDir(), nil)
	alice, res := login(t, n, "alice")
	chanOp(t, alice, "#open")
	chanOp(t, alice, "#closed", "+i")
	sendLines(t, alice, "PRIVMSG #open :hello open", "PIN #open", "PRIVMSG #closed :hello closed")
	syncClient(t, alice)
	base := "http://" + n.HTTPAddr()
	var msgid string
	eventually(t, "both messages stored", func() bool {
		_, open := httpDo(t, "GET", base+"/api/v1/channels/%23open/history", "", nil)
		_, closed := httpDo(t, "GET", base+"/api/v1/channels/%23closed/history", res.Token, nil)
		var msgs []struct {
			MsgID string `json:"msgid"`
		}
		if json.Unmarshal(open, &msgs) != nil || len(msgs) != 1 || !strings.Contains(string(closed), "hello closed") {
			return false
		}
		msgid = msgs[0].MsgID
		return true
	})
	return mcpFixture{endpoint: base + "/mcp", token: res.Token, msgid: msgid}
}

// mcpCall is one tool call and what its result must show.
type mcpCall struct {
	tool      string
	args      map[string]any
	isError   bool
	contains  string
	bearerNow bool // the outcome differs with a bearer: then not an error, and contains member text
}

func (f mcpFixture) calls() []mcpCall {
	return []mcpCall{
		{tool: "freeq_channels", args: map[string]any{}, contains: "#open"},
		{tool: "freeq_history", args: map[string]any{"channel": "#open", "limit": 10}, contains: "hello open"},
		{tool: "freeq_history", args: map[string]any{"channel": "#closed"}, isError: true, contains: "invite-only", bearerNow: true},
		{tool: "freeq_search", args: map[string]any{"channel": "#open", "q": "hello"}, contains: "hello open"},
		{tool: "freeq_search", args: map[string]any{"channel": "#closed", "q": "hello"}, isError: true, contains: "invite-only", bearerNow: true},
		{tool: "freeq_verify", args: map[string]any{"msgid": f.msgid}, contains: `"verdict"`},
		{tool: "freeq_pins", args: map[string]any{"channel": "#open"}, contains: `"pins"`},
	}
}

var mcpTools = []string{"freeq_channels", "freeq_history", "freeq_pins", "freeq_search", "freeq_verify"}

var mcpResources = map[string]string{
	"freeq://server/openapi.json": `"openapi":"3.1.0"`, "freeq://server/llms.txt": "# Palaver",
	"freeq://server/agents.md": "## Restricted channels", "freeq://server/auth.md": "API-BEARER",
}

// checkCall checks one tool result against its expectation, with or without a bearer.
func checkCall(t *testing.T, c mcpCall, bearer, isError bool, text string) {
	t.Helper()
	wantError, want := c.isError, c.contains
	if bearer && c.bearerNow {
		wantError, want = false, "hello closed"
	}
	if isError != wantError || !strings.Contains(text, want) {
		t.Errorf("%s %v (bearer %v): isError %v, want %v; %q not in %.300s", c.tool, c.args, bearer, isError, wantError, want, text)
	}
}

func checkToolNames(t *testing.T, names []string) {
	t.Helper()
	slices.Sort(names)
	if !slices.Equal(names, mcpTools) {
		t.Fatalf("tools %v", names)
	}
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPWithTheOfficialGoSDK: github.com/modelcontextprotocol/go-sdk's client negotiates,
// lists the five tools, calls each with and without a bearer, and reads each resource.
func TestMCPWithTheOfficialGoSDK(t *testing.T) {
	f := newMCPFixture(t)
	for _, bearer := range []bool{false, true} {
		httpClient := http.DefaultClient
		if bearer {
			httpClient = &http.Client{Transport: bearerTransport{f.token}}
		}
		ctx := testCtx(t)
		client := sdk.NewClient(&sdk.Implementation{Name: "palaver-test", Version: "1"}, nil)
		session, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: f.endpoint, HTTPClient: httpClient, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatalf("connect (bearer %v): %v", bearer, err)
		}
		if v := session.InitializeResult().ProtocolVersion; v != mcp.ProtocolVersion {
			t.Errorf("negotiated %q", v)
		}
		tools, err := session.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range tools.Tools {
			names = append(names, tl.Name)
		}
		checkToolNames(t, names)
		for _, c := range f.calls() {
			res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: c.tool, Arguments: c.args})
			if err != nil {
				t.Fatalf("%s: %v", c.tool, err)
			}
			var text strings.Builder
			for _, content := range res.Content {
				if tc, ok := content.(*sdk.TextContent); ok {
					text.WriteString(tc.Text)
				}
			}
			checkCall(t, c, bearer, res.IsError, text.String())
		}
		for uri, want := range mcpResources {
			res, err := session.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
			if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, want) {
				t.Errorf("read %s: %v", uri, err)
			}
		}
		if err := session.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
}

// TestMCPWithMark3labsClient: the same with github.com/mark3labs/mcp-go's client.
func TestMCPWithMark3labsClient(t *testing.T) {
	f := newMCPFixture(t)
	for _, bearer := range []bool{false, true} {
		var opts []mcpgotransport.StreamableHTTPCOption
		if bearer {
			opts = append(opts, mcpgotransport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + f.token}))
		}
		ctx := testCtx(t)
		c, err := mcpgoclient.NewStreamableHttpClient(f.endpoint, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		init := mcpgo.InitializeRequest{}
		init.Params.ProtocolVersion = mcpgo.LATEST_PROTOCOL_VERSION
		init.Params.ClientInfo = mcpgo.Implementation{Name: "palaver-test", Version: "1"}
		ir, err := c.Initialize(ctx, init)
		if err != nil {
			t.Fatalf("initialize (bearer %v): %v", bearer, err)
		}
		if ir.ProtocolVersion != mcp.ProtocolVersion {
			t.Errorf("negotiated %q", ir.ProtocolVersion)
		}
		tools, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range tools.Tools {
			names = append(names, tl.Name)
		}
		checkToolNames(t, names)
		for _, call := range f.calls() {
			req := mcpgo.CallToolRequest{}
			req.Params.Name, req.Params.Arguments = call.tool, call.args
			res, err := c.CallTool(ctx, req)
			if err != nil {
				t.Fatalf("%s: %v", call.tool, err)
			}
			var text strings.Builder
			for _, content := range res.Content {
				if tc, ok := content.(mcpgo.TextContent); ok {
					text.WriteString(tc.Text)
				}
			}
			checkCall(t, call, bearer, res.IsError, text.String())
		}
		for uri, want := range mcpResources {
			req := mcpgo.ReadResourceRequest{}
			req.Params.URI = uri
			res, err := c.ReadResource(ctx, req)
			if err != nil || len(res.Contents) != 1 {
				t.Errorf("read %s: %v", uri, err)
				continue
			}
			if tc, ok := res.Contents[0].(mcpgo.TextResourceContents); !ok || !strings.Contains(tc.Text, want) {
				t.Errorf("read %s: %T", uri, res.Contents[0])
			}
		}
		c.Close()
	}
}

// TestEveryNodeServesTheSameDocuments: two nodes of a cluster serve the same bytes apart from their
// base URLs; the terms are identical.
func TestEveryNodeServesTheSameDocuments(t *testing.T) {
	nodes := startCluster(t)
	paths := []string{"/llms.txt", "/agents.md", "/AGENTS.md", "/auth.md", "/.well-known/welcome.md", "/index.md", "/tos",
		"/robots.txt", "/sitemap.xml", "/.well-known/ard.json", "/.well-known/ai-catalog.json", "/.well-known/agent-card.json",
		"/.well-known/agent.json", "/.well-known/api-catalog", "/.well-known/mcp", "/.well-known/mcp/server-card.json",
		"/.well-known/http-message-signatures-directory", "/api/v1/openapi.json"}
	fetch := func(n *Node, path string) string {
		base := "http://" + n.HTTPAddr()
		resp, body := httpDo(t, "GET", base+path, "", nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s%s: %d", base, path, resp.StatusCode)
		}
		// The IRC listeners are named with the base URL's host and their own ports, WebSocket IRC
		// with the base URL.
		out := strings.ReplaceAll(string(body), base, "{base}")
		out = strings.ReplaceAll(out, "ws://"+n.HTTPAddr(), "{base}")
		for _, addr := range []string{n.IRCAddr(), n.TLSAddr()} {
			out = strings.ReplaceAll(out, addr, "{irc}")
		}
		return strings.ReplaceAll(out, url.QueryEscape(base), "{base}")
	}
	for _, p := range paths {
		a, b := fetch(nodes[0], p), fetch(nodes[2], p)
		if a != b {
			t.Errorf("%s differs between nodes:\n%s", p, firstDifference(a, b))
		}
		if p == "/tos" && !strings.HasPrefix(a, "Palaver — terms of service\nversion 1\n") {
			t.Errorf("terms %q", a)
		}
	}
}

func firstDifference(a, b string) string {
	sa, sb := bufio.NewScanner(strings.NewReader(a)), bufio.NewScanner(strings.NewReader(b))
	for sa.Scan() {
		if !sb.Scan() || sa.Text() != sb.Text() {
			return sa.Text() + "\n≠\n" + sb.Text()
		}
	}
	return "(one is longer)"
}

// TestTermsOfService: the built-in terms are the same bytes across restarts; an operator's file
// replaces them; a file that is not plain text stops the node with a clear error.
func TestTermsOfService(t *testing.T) {
	dir := t.TempDir()
	first := startNode(t, dir, nil)
	_, before := httpDo(t, "GET", "http://"+first.HTTPAddr()+"/tos", "", nil)
	first.Close()
	again := startNode(t, dir, nil)
	if _, after := httpDo(t, "GET", "http://"+again.HTTPAddr()+"/tos", "", nil); string(after) != string(before) || len(before) == 0 {
		t.Fatalf("the terms changed across a restart:\n%q\n%q", before, after)
	}
	again.Close()

	terms := filepath.Join(t.TempDir(), "terms.txt")
	if err := os.WriteFile(terms, []byte("Example terms\r\nversion 2\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	own := startNode(t, t.TempDir(), func(c *Config) { c.TOSFile = terms })
	if _, body := httpDo(t, "GET", "http://"+own.HTTPAddr()+"/tos", "", nil); string(body) != "Example terms\nversion 2\n" {
		t.Fatalf("operator terms served as %q", body)
	}

	bad := filepath.Join(t.TempDir(), "terms.bin")
	if err := os.WriteFile(bad, []byte{0xff, 0x00, 0x01}, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := LoopbackConfig(t.TempDir())
	cfg.IRCAddr, cfg.TOSFile = "", bad
	n, err := Start(ctx, cfg, slog.New(slog.DiscardHandler))
	if err == nil {
		n.Close()
		t.Fatal("a binary terms file was accepted")
	}
	if !strings.Contains(err.Error(), "terms of service") {
		t.Fatalf("error %v", err)
	}
}
