package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/gin-gonic/gin"
)

// maxToolLimit caps the limit argument of the paged tools; defaultToolLimit
// is its value when absent.
const (
	maxToolLimit     = 200
	defaultToolLimit = 50
)

// tool is one MCP tool over one REST route.
type tool struct {
	name, title, description string
	properties               map[string]any
	required                 []string
	// target builds the REST request from validated arguments.
	target func(args toolArgs) string
	// wrap turns the REST body into the structured result (an object).
	wrap func(args toolArgs, body any) any
}

// toolArgs are validated arguments.
type toolArgs struct {
	strings map[string]string
	ints    map[string]int64
}

var (
	channelProp = map[string]any{"type": "string", "minLength": 1, "description": "Channel name, with or without the leading #."}
	limitProp   = map[string]any{"type": "integer", "minimum": 1, "maximum": maxToolLimit, "default": defaultToolLimit, "description": "Page size (1 to 200, default 50)."}
)

var tools = []tool{
	{
		name: "freeq_channels", title: "List public channels",
		description: "Public channels that have members or a topic, most members first: name, topic, member count and modes.",
		properties:  map[string]any{},
		target:      func(toolArgs) string { return "/api/v1/channels" },
		wrap:        func(_ toolArgs, body any) any { return map[string]any{"channels": body} },
	},
	{
		name: "freeq_history", title: "Read a channel's history",
		description: "Messages of a channel, oldest first within the page (newest page first). Page back with before = the oldest timestamp you hold. A restricted channel (+i, +k, +E) needs the bearer of a member.",
		properties: map[string]any{
			"channel": channelProp, "limit": limitProp,
			"before": map[string]any{"type": "integer", "minimum": 0, "description": "Unix seconds: only messages older than this."},
		},
		required: []string{"channel"},
		target: func(a toolArgs) string {
			q := url.Values{}
			setInts(q, a, "limit", "before")
			return withQuery("/api/v1/channels/"+url.PathEscape(a.strings["channel"])+"/history", q)
		},
		wrap: func(a toolArgs, body any) any {
			return map[string]any{"channel": a.strings["channel"], "messages": body}
		},
	},
	{
		name: "freeq_search", title: "Search a channel",
		description: "Full-text search in one channel's messages, newest first; every term must match. A restricted channel needs the bearer of a member.",
		properties:  map[string]any{"channel": channelProp, "q": map[string]any{"type": "string", "minLength": 1, "description": "Search terms."}, "limit": limitProp},
		required:    []string{"channel", "q"},
		target: func(a toolArgs) string {
			q := url.Values{"channel": {a.strings["channel"]}, "q": {a.strings["q"]}}
			setInts(q, a, "limit")
			return withQuery("/api/v1/search", q)
		},
		wrap: func(a toolArgs, body any) any {
			return map[string]any{"channel": a.strings["channel"], "messages": body}
		},
	},
	{
		name: "freeq_verify", title: "Verify a message",
		description: "Checks a message's signature: verdict valid or invalid, and what it proves (authorship, relay or nothing).",
		properties:  map[string]any{"msgid": map[string]any{"type": "string", "minLength": 1, "description": "The message id (ULID)."}},
		required:    []string{"msgid"},
		target:      func(a toolArgs) string { return "/api/v1/verify/" + url.PathEscape(a.strings["msgid"]) },
		wrap:        func(_ toolArgs, body any) any { return body },
	},
	{
		name: "freeq_pins", title: "A channel's pins",
		description: "Pinned messages of a channel, newest pin first.",
		properties:  map[string]any{"channel": channelProp},
		required:    []string{"channel"},
		target:      func(a toolArgs) string { return "/api/v1/channels/" + url.PathEscape(a.strings["channel"]) + "/pins" },
		wrap:        func(_ toolArgs, body any) any { return body },
	},
}

// setInts copies integer arguments into the query; an absent limit is
// defaultToolLimit.
func setInts(q url.Values, a toolArgs, names ...string) {
	for _, n := range names {
		v, ok := a.ints[n]
		if !ok && n == "limit" {
			v, ok = defaultToolLimit, true
		}
		if ok {
			q.Set(n, strconv.FormatInt(v, 10))
		}
	}
}

func withQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

func findTool(name string) (tool, bool) {
	for _, t := range tools {
		if t.name == name {
			return t, true
		}
	}
	return tool{}, false
}

func toolList() []map[string]any {
	out := make([]map[string]any, 0, len(tools))
	for _, t := range tools {
		schema := map[string]any{"type": "object", "properties": t.properties, "additionalProperties": false}
		if len(t.required) > 0 {
			schema["required"] = t.required
		}
		out = append(out, map[string]any{
			"name": t.name, "title": t.title, "description": t.description, "inputSchema": schema,
			"annotations": map[string]any{"title": t.title, "readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
		})
	}
	return out
}

// validate checks arguments against the tool's schema.
func (t tool) validate(raw json.RawMessage) (toolArgs, *rpcError) {
	a := toolArgs{strings: map[string]string{}, ints: map[string]int64{}}
	var args map[string]json.RawMessage
	if p := bytes.TrimSpace(raw); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
		if p[0] != '{' || json.Unmarshal(p, &args) != nil {
			return a, invalidParams("arguments must be an object")
		}
	}
	for name, v := range args {
		prop, known := t.properties[name].(map[string]any)
		if !known {
			return a, invalidParams(fmt.Sprintf("%s takes no argument %q", t.name, name))
		}
		switch prop["type"] {
		case "string":
			var s string
			if json.Unmarshal(v, &s) != nil || s == "" {
				return a, invalidParams(fmt.Sprintf("%s must be a non-empty string", name))
			}
			a.strings[name] = s
		case "integer":
			var f float64
			if json.Unmarshal(v, &f) != nil || f != math.Trunc(f) || math.IsInf(f, 0) {
				return a, invalidParams(fmt.Sprintf("%s must be an integer", name))
			}
			n := int64(f)
			if lo, ok := prop["minimum"].(int); ok && n < int64(lo) {
				return a, invalidParams(fmt.Sprintf("%s must be at least %d", name, lo))
			}
			if hi, ok := prop["maximum"].(int); ok && n > int64(hi) {
				return a, invalidParams(fmt.Sprintf("%s must be at most %d", name, hi))
			}
			a.ints[name] = n
		}
	}
	for _, r := range t.required {
		if _, ok := a.strings[r]; !ok {
			return a, invalidParams(fmt.Sprintf("%s needs the argument %q", t.name, r))
		}
	}
	return a, nil
}

func invalidParams(msg string) *rpcError {
	return &rpcError{Code: codeInvalidParams, Message: "Invalid params: " + msg}
}

// callTool runs tools/call.
//
// Arguments that do not match the tool's schema are a protocol error (-32602) under 2025-06-18
// and, from 2025-11-25 on (SEP-1303), a tool result with isError true, which a model can read
// and correct.
func (s *Server) callTool(c *gin.Context, raw json.RawMessage, version string) (any, *rpcError) {
	var params struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if p := bytes.TrimSpace(raw); len(p) == 0 || p[0] != '{' || json.Unmarshal(p, &params) != nil || params.Name == nil {
		return nil, invalidParams("tools/call needs params {name, arguments}")
	}
	t, ok := findTool(*params.Name)
	if !ok {
		return nil, &rpcError{Code: codeMethodNotFound, Message: "Unknown tool: " + *params.Name}
	}
	args, bad := t.validate(params.Arguments)
	if bad != nil {
		if version >= "2025-11-25" {
			return toolError(bad.Message, nil), nil
		}
		return nil, bad
	}
	status, header, body := s.restCall(c, t.target(args))
	var decoded any
	if err := json.Unmarshal(body, &decoded); err != nil {
		decoded = nil
	}
	if status/100 != 2 {
		return toolError(s.refusal(status, header, decoded), decoded), nil
	}
	if decoded == nil {
		return toolError("The server answered with a body that is not JSON", nil), nil
	}
	structured := t.wrap(args, decoded)
	text, _ := json.MarshalIndent(structured, "", "  ")
	return map[string]any{
		"content":           []map[string]any{{"type": "text", "text": string(text)}},
		"structuredContent": structured,
		"isError":           false,
	}, nil
}

func toolError(text string, body any) map[string]any {
	out := map[string]any{"content": []map[string]any{{"type": "text", "text": text}}, "isError": true}
	if obj, ok := body.(map[string]any); ok {
		out["structuredContent"] = obj
	}
	return out
}

// refusal explains a REST refusal to the model.
func (s *Server) refusal(status int, header http.Header, body any) string {
	msg := http.StatusText(status)
	if obj, ok := body.(map[string]any); ok {
		if m, ok := obj["message"].(string); ok && m != "" {
			msg = m
		}
	}
	switch status {
	case http.StatusBadRequest:
		return "Bad request: " + msg
	case http.StatusUnauthorized:
		return "Unauthorized: " + msg + ". Get a bearer token as " + s.cfg.BaseURL + "/auth.md shows and send it as Authorization: Bearer <token>."
	case http.StatusForbidden:
		return "Forbidden: " + msg + ". The channel is invite-only (+i), needs a key (+k), is encrypted-only (+E) or is a direct-message venue: " +
			"only the bearer of a member, its founder or a channel operator may read it (see " + s.cfg.BaseURL + "/agents.md)."
	case http.StatusNotFound:
		return "Not found: " + msg
	case http.StatusTooManyRequests:
		return "Rate limited: " + msg + "; retry after " + header.Get("Retry-After") + " s."
	case http.StatusServiceUnavailable:
		return "Unavailable: " + msg + ". This node cannot answer this now (no message store, or no cluster leader); retry later or ask another node."
	}
	return fmt.Sprintf("The server answered %d %s: %s", status, http.StatusText(status), msg)
}

// resource is a document readable through resources/read.
type resource struct{ uri, name, title, mimeType, path, description string }

var resources = []resource{
	{"freeq://server/openapi.json", "openapi.json", "OpenAPI contract", "application/json", "/api/v1/openapi.json", "Every HTTP route of this server (OpenAPI 3.1.0)."},
	{"freeq://server/llms.txt", "llms.txt", "llms.txt", "text/markdown", "/llms.txt", "Index of the service for language models."},
	{"freeq://server/agents.md", "agents.md", "Rules for agents", "text/markdown", "/agents.md", "What agents may do, limits, restricted channels, signing."},
	{"freeq://server/auth.md", "auth.md", "Credential walkthrough", "text/markdown", "/auth.md", "How to get a bearer token."},
}

func resourceList() []map[string]any {
	out := make([]map[string]any, 0, len(resources))
	for _, r := range resources {
		out = append(out, map[string]any{"uri": r.uri, "name": r.name, "title": r.title, "mimeType": r.mimeType, "description": r.description})
	}
	return out
}

// resourceCache keeps each resource's encoded resources/read result: the documents are fixed
// once the node serves (its configuration and mounted routes), so a read, or a batch of them,
// costs a copy of cached bytes rather than a rebuild of the contract document.
type resourceCache struct {
	mu      sync.Mutex
	encoded map[string]json.RawMessage
}

func (rc *resourceCache) get(uri string) (json.RawMessage, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	v, ok := rc.encoded[uri]
	return v, ok
}

func (rc *resourceCache) put(uri string, v json.RawMessage) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.encoded == nil {
		rc.encoded = make(map[string]json.RawMessage, len(resources))
	}
	rc.encoded[uri] = v
}

func (s *Server) readResource(c *gin.Context, raw json.RawMessage) (any, *rpcError) {
	var params struct {
		URI *string `json:"uri"`
	}
	if p := bytes.TrimSpace(raw); len(p) == 0 || p[0] != '{' || json.Unmarshal(p, &params) != nil || params.URI == nil {
		return nil, invalidParams("resources/read needs params {uri}")
	}
	for _, r := range resources {
		if r.uri != *params.URI {
			continue
		}
		if cached, ok := s.resources.get(r.uri); ok {
			return cached, nil
		}
		status, _, body := s.restCall(c, r.path)
		if status != http.StatusOK {
			return nil, &rpcError{Code: codeInternalError, Message: fmt.Sprintf("Reading %s answered %d", r.path, status)}
		}
		encoded, err := json.Marshal(map[string]any{"contents": []map[string]any{{"uri": r.uri, "mimeType": r.mimeType, "text": string(body)}}})
		if err != nil {
			return nil, &rpcError{Code: codeInternalError, Message: "Reading " + r.path + ": the contents could not be encoded"}
		}
		// Without a configured base URL the documents name the request's host: not cached.
		if s.cfg.BaseURL != "" {
			s.resources.put(r.uri, encoded)
		}
		return json.RawMessage(encoded), nil
	}
	return nil, &rpcError{Code: codeResourceNotFound, Message: "Resource not found: " + *params.URI, Data: map[string]string{"uri": *params.URI}}
}
