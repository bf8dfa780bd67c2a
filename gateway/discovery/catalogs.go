package discovery

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"html"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/palaver-chat/palaver/gateway/mcp"
)

// The JSON catalogs, robots.txt, the sitemap and the HTML home page, each
// derived from the route table: an entry appears only when its route is
// mounted.

// catalogEntry is a candidate entry of the ard/ai-catalog document.
type catalogEntry struct {
	method, path string
	Name         string `json:"name"`
	Type         string `json:"type"`
	MediaType    string `json:"mediaType"`
	URL          string `json:"url"`
	Description  string `json:"description"`
}

var catalogCandidates = []catalogEntry{
	{method: "GET", path: "/api/v1/openapi.json", Name: "OpenAPI contract", Type: "openapi", MediaType: "application/json", Description: "Every HTTP route of this server, OpenAPI 3.1.0."},
	{method: "GET", path: "/llms.txt", Name: "llms.txt", Type: "llms-txt", MediaType: "text/markdown", Description: "Markdown index of the service for language models."},
	{method: "GET", path: "/agents.md", Name: "Rules for agents", Type: "documentation", MediaType: "text/markdown", Description: "What agents may do, limits, restricted channels, signing."},
	{method: "GET", path: "/auth.md", Name: "Credential walkthrough", Type: "authentication", MediaType: "text/markdown", Description: "Mint a did:key, log in with SASL ATPROTO-CHALLENGE, take the bearer token."},
	{method: "POST", path: "/mcp", Name: "MCP endpoint", Type: "mcp", MediaType: "application/json", Description: "Remote MCP server (streamable HTTP, JSON replies) with read-only chat tools."},
	{method: "GET", path: "/.well-known/welcome.md", Name: "Enrollment", Type: "onboarding", MediaType: "text/markdown", Description: "How an agent enrolls itself; no signup endpoint exists."},
	{method: "GET", path: "/tos", Name: "Terms of service", Type: "terms", MediaType: "text/plain", Description: "The terms, with stable bytes."},
	{method: "GET", path: "/api/v1/health", Name: "Health", Type: "diagnostics", MediaType: "application/json", Description: "Health of the node."},
	{method: "GET", path: "/irc", Name: "IRC over WebSocket", Type: "transport", MediaType: "text/plain", Description: "The IRC line protocol over WebSocket."},
}

// skill is an A2A agent card skill, offered when its route is mounted.
type skill struct {
	method, path string
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Description  string   `json:"description"`
	Tags         []string `json:"tags"`
}

var skillCandidates = []skill{
	{method: "GET", path: "/api/v1/channels/{name}/history", ID: "read_channels", Name: "Read channels", Description: "List public channels and read their history.", Tags: []string{"chat", "history"}},
	{method: "GET", path: "/api/v1/search", ID: "search_messages", Name: "Search messages", Description: "Full-text search in a channel's messages.", Tags: []string{"chat", "search"}},
	{method: "GET", path: "/api/v1/verify/{msgid}", ID: "verify_message", Name: "Verify a message", Description: "Check a message's signature and what it proves.", Tags: []string{"signatures", "verification"}},
	{method: "GET", path: "/irc", ID: "join_and_speak", Name: "Join and speak", Description: "Join channels and send messages over IRC after a DID login.", Tags: []string{"chat", "irc"}},
}

func (s *Service) catalogs(v view) map[string]any {
	base := v.Base
	name := s.cfg.ServerName
	description := name + ": a Palaver chat server, IRC with DID identities and a JSON API for agents."
	var entries []catalogEntry
	for _, e := range catalogCandidates {
		if v.ops.has(e.method, e.path) {
			e.URL = base + e.path
			entries = append(entries, e)
		}
	}
	if entries == nil {
		entries = []catalogEntry{}
	}
	ard := map[string]any{
		"name": name, "description": description, "url": base, "documentation": base + "/llms.txt",
		"contact": base + "/agents.md", "updated": Updated, "entries": entries,
		"trustManifest": map[string]any{
			"policy_url":   base + "/tos",
			"contact":      base + "/agents.md",
			"data_use":     "Messages in public channels are stored, replicated to every node, served over the API and indexed for search. Private keys are never requested.",
			"attribution":  "Messages carry ed25519 signatures in the +freeq.at/sig tag; a signature by the sender's own key proves authorship.",
			"verification": base + "/api/v1/verify/{msgid}",
		},
	}

	skills := []skill{}
	for _, sk := range skillCandidates {
		if v.ops.has(sk.method, sk.path) || (sk.ID == "join_and_speak" && v.Transports != "") {
			skills = append(skills, sk)
		}
	}
	card := map[string]any{
		"name": name, "description": description, "url": base, "version": s.cfg.Version,
		"provider":                          map[string]any{"organization": name, "url": base},
		"capabilities":                      map[string]any{"streaming": false, "pushNotifications": false},
		"defaultInputModes":                 []string{"text/plain"},
		"defaultOutputModes":                []string{"text/plain", "application/json"},
		"documentationUrl":                  base + "/llms.txt",
		"securitySchemes":                   map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": "Token from NOTICE API-BEARER after SASL ATPROTO-CHALLENGE on IRC; see " + base + "/auth.md"}},
		"skills":                            skills,
		"preferredTransport":                "HTTP+JSON",
		"supportsAuthenticatedExtendedCard": false,
	}

	capabilities := []string{}
	for _, o := range v.ops.withPrefix("/agent/tools/") {
		if o.Method == "POST" {
			capabilities = append(capabilities, strings.TrimPrefix(o.Path, "/agent/tools/"))
		}
	}
	if s.cfg.FreeFormSession && v.ops.has("POST", "/agent/session") {
		capabilities = append(capabilities, "free_form_session")
	}
	agent := map[string]any{
		"service": "Palaver", "version": s.cfg.Version, "description": description,
		"capabilities": capabilities,
		"auth":         map[string]any{"required": false, "methods": []string{"bearer"}, "documentation": base + "/auth.md"},
	}
	if len(capabilities) > 0 {
		agent["assistance_endpoint"] = base + "/agent/tools"
	}

	link := map[string]any{"anchor": base}
	if v.ops.has("GET", "/api/v1/openapi.json") {
		link["service-desc"] = []map[string]string{{"href": base + "/api/v1/openapi.json", "type": "application/json"}}
	}
	var docs []map[string]string
	if v.ops.has("GET", "/llms.txt") {
		docs = append(docs, map[string]string{"href": base + "/llms.txt", "type": "text/markdown"})
	}
	if v.ops.has("GET", "/") {
		docs = append(docs, map[string]string{"href": base + "/", "type": "text/html"})
	}
	if docs != nil {
		link["service-doc"] = docs
	}
	if v.ops.has("GET", "/api/v1/health") {
		link["status"] = []map[string]string{{"href": base + "/api/v1/health", "type": "application/json"}}
	}

	out := map[string]any{
		"/.well-known/ard.json":        ard,
		"/.well-known/agent-card.json": card,
		"/.well-known/agent.json":      agent,
		"/.well-known/api-catalog":     map[string]any{"linkset": []any{link}},
		"/.well-known/http-message-signatures-directory": map[string]any{
			"keys":          []any{},
			"description":   "HTTP message signatures are not used by this server; the directory is empty. Chat messages are signed in the +freeq.at/sig tag instead.",
			"documentation": base + "/agents.md",
		},
	}
	remote := map[string]any{}
	if v.HasMCP {
		remote = map[string]any{"url": base + "/mcp", "transport": "streamable-http", "authentication": "optional bearer token; see " + base + "/auth.md"}
		out["/.well-known/mcp"] = map[string]any{"mcp": map[string]any{
			"url": base + "/mcp", "transport": "streamable-http", "protocolVersion": mcp.ProtocolVersion,
			"serverCard": base + "/.well-known/mcp/server-card.json",
		}}
	} else {
		out["/.well-known/mcp"] = map[string]any{"mcp": nil}
	}
	out["/.well-known/mcp/server-card.json"] = map[string]any{
		"name": name, "description": description, "version": s.cfg.Version, "protocolVersion": mcp.ProtocolVersion,
		"remote":        remote,
		"published":     false,
		"stdio":         map[string]any{"published": false, "description": "No stdio package is published; use the remote endpoint."},
		"capabilities":  map[string]any{"tools": v.HasMCP, "resources": v.HasMCP, "prompts": false},
		"documentation": base + "/llms.txt",
	}
	return out
}

// aiCrawlers get stanzas of their own in robots.txt, all allowed.
var aiCrawlers = []string{"GPTBot", "ChatGPT-User", "OAI-SearchBot", "ClaudeBot", "Claude-User", "Claude-SearchBot",
	"anthropic-ai", "PerplexityBot", "Google-Extended", "Applebot-Extended", "CCBot", "Bytespider", "Meta-ExternalAgent"}

func robots(base string) []byte {
	var b bytes.Buffer
	b.WriteString("# Everything here is public and meant to be read by people and agents alike.\n")
	b.WriteString("User-agent: *\nAllow: /\n\n")
	for _, c := range aiCrawlers {
		fmt.Fprintf(&b, "User-agent: %s\nAllow: /\n\n", c)
	}
	fmt.Fprintf(&b, "Sitemap: %s/sitemap.xml\n", base)
	return b.Bytes()
}

// sitemapXML lists the anonymous GET routes without path parameters or
// required query parameters that serve documents or data (not transports,
// metrics or node-to-node): pages a plain GET of the listed URL answers 200.
func sitemapXML(base string, ops table) ([]byte, error) {
	type url struct {
		Loc        string `xml:"loc"`
		LastMod    string `xml:"lastmod"`
		ChangeFreq string `xml:"changefreq"`
	}
	set := struct {
		XMLName xml.Name `xml:"urlset"`
		NS      string   `xml:"xmlns,attr"`
		URLs    []url    `xml:"url"`
	}{NS: "http://www.sitemaps.org/schemas/sitemap/0.9"}
	for _, o := range ops {
		if o.Method != "GET" || strings.Contains(o.Path, "{") || o.Auth == "bearer" || o.RequiredQuery || !sitemapWorthy(o.Path) {
			continue
		}
		freq := "weekly"
		if strings.HasPrefix(o.Path, "/api/v1/") && !strings.HasPrefix(o.Path, "/api/v1/openapi") {
			freq = "always"
		}
		set.URLs = append(set.URLs, url{Loc: base + o.Path, LastMod: Updated, ChangeFreq: freq})
	}
	out, err := xml.MarshalIndent(set, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("discovery: encoding the sitemap: %w", err)
	}
	return append([]byte(xml.Header), append(out, '\n')...), nil
}

func sitemapWorthy(path string) bool {
	switch {
	case path == "/irc" || path == "/mcp" || path == "/metrics" || path == "/AGENTS.md":
		return false
	case strings.HasPrefix(path, "/internal/") || strings.HasPrefix(path, "/federation/"):
		return false
	}
	return true
}

var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))

// renderHTML renders a markdown document as a plain HTML page. Raw HTML in
// the source is not passed through (goldmark's default).
func renderHTML(title string, source []byte) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"+
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>%s</title>\n"+
		"<link rel=\"alternate\" type=\"text/markdown\" href=\"/index.md\">\n"+
		"<style>body{max-width:42rem;margin:2rem auto;padding:0 1rem;font:16px/1.5 system-ui,sans-serif;color:#222}"+
		"code{background:#f3f3f3;padding:0 .2em}a{color:#0645ad}</style>\n</head>\n<body>\n", html.EscapeString(title))
	if err := markdown.Convert(source, &b); err != nil {
		return nil, fmt.Errorf("discovery: rendering the home page: %w", err)
	}
	b.WriteString("</body>\n</html>\n")
	return b.Bytes(), nil
}
