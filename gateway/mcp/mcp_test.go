package mcp_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/mcp"
	"github.com/palaver-chat/palaver/gateway/rest"
)

// TestHTTPRules covers the HTTP level: methods, 202, 413, CORS, and that
// Accept and Content-Type are not checked.
func TestHTTPRules(t *testing.T) {
	e := newEndpoint(t, mcp.Config{})
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", mcp.MaxBodyBytes) + `"}}`
	tests := []struct {
		name, method, body string
		header             []string
		status             int
		check              func(t *testing.T, h http.Header, body []byte)
	}{
		{"GET is 405", "GET", "", nil, 405, errorObject},
		{"HEAD is 405", "HEAD", "", nil, 405, nil},
		{"PUT is 405", "PUT", "{}", nil, 405, errorObject},
		{"PATCH is 405", "PATCH", "{}", nil, 405, errorObject},
		{"DELETE is 405", "DELETE", "", nil, 405, errorObject},
		{"preflight from the server's own origin", "OPTIONS", "", []string{"Origin", "{base}", "Access-Control-Request-Method", "POST"}, 204,
			func(t *testing.T, h http.Header, _ []byte) {
				if h.Get("Access-Control-Allow-Origin") != "*" || h.Get("Access-Control-Allow-Credentials") != "" ||
					!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") ||
					!strings.Contains(h.Get("Access-Control-Allow-Headers"), "MCP-Protocol-Version") {
					t.Fatalf("CORS headers %v", h)
				}
			}},
		{"the server's own origin on POST", "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, []string{"Origin", "{base}"}, 200,
			func(t *testing.T, h http.Header, _ []byte) {
				if h.Get("Access-Control-Allow-Origin") != "*" || h.Get("X-Frame-Options") != "DENY" || h.Get("Content-Security-Policy") == "" {
					t.Fatalf("headers %v", h)
				}
			}},
		{"a configured origin on POST", "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, []string{"Origin", "https://app.example"}, 200, jsonBody},
		{"an unknown origin on POST (DNS rebinding)", "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, []string{"Origin", "http://evil.example.com"}, 403, errorObject},
		{"an unknown origin's preflight", "OPTIONS", "", []string{"Origin", "https://elsewhere.example", "Access-Control-Request-Method", "POST"}, 403, errorObject},
		{"an origin naming the request's own host is not enough", "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, []string{"Origin", "http://localhost:{port}"}, 403, errorObject},
		{"one notification", "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil, 202, empty},
		{"unknown notification", "POST", `{"jsonrpc":"2.0","method":"notifications/whatever","params":{}}`, nil, 202, empty},
		{"batch of notifications", "POST", `[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","method":"notifications/cancelled"}]`, nil, 202, empty},
		{"no Content-Type, odd Accept", "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, []string{"Accept", "text/plain"}, 200, jsonBody},
		{"text/event-stream Accept", "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, []string{"Accept", "application/json, text/event-stream", "Content-Type", "application/json"}, 200, jsonBody},
		{"body over the cap", "POST", big, nil, 413, errorObject},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header := slices.Clone(tt.header)
			for i := range header {
				header[i] = strings.NewReplacer("{base}", e.base(), "{port}", e.port()).Replace(header[i])
			}
			resp, body := e.do(t, tt.method, tt.body, header...)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if tt.status == 405 && resp.Header.Get("Allow") != "POST" {
				t.Fatalf("Allow %q", resp.Header.Get("Allow"))
			}
			if tt.check != nil {
				tt.check(t, resp.Header, body)
			}
		})
	}
}

func errorObject(t *testing.T, h http.Header, body []byte) {
	t.Helper()
	var e rest.ErrorObject
	if err := json.Unmarshal(body, &e); err != nil || e.Status == 0 || e.Error != http.StatusText(e.Status) || e.Message == "" || e.Documentation == "" {
		t.Fatalf("not an Error object: %s", body)
	}
	if !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Fatalf("Content-Type %q", h.Get("Content-Type"))
	}
}

func empty(t *testing.T, _ http.Header, body []byte) {
	t.Helper()
	if len(body) != 0 {
		t.Fatalf("body %q", body)
	}
}

func jsonBody(t *testing.T, h http.Header, body []byte) {
	t.Helper()
	if h.Get("Content-Type") != "application/json" || !json.Valid(body) {
		t.Fatalf("%q: %s", h.Get("Content-Type"), body)
	}
}

// TestJSONRPCRules covers parsing, batches and the error codes.
func TestJSONRPCRules(t *testing.T) {
	e := newEndpoint(t, mcp.Config{})
	type want struct {
		id   string // raw JSON of the id
		code int    // 0: a result
	}
	tests := []struct {
		name   string
		body   string
		header []string
		batch  bool
		want   []want
	}{
		{"invalid JSON", `{"jsonrpc":"2.0","id":1,`, nil, false, []want{{"null", -32700}}},
		{"not JSON at all", `hello`, nil, false, []want{{"null", -32700}}},
		{"empty body", ``, nil, false, []want{{"null", -32700}}},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":7,"method":"ping"}`, nil, false, []want{{"7", -32600}}},
		{"jsonrpc missing", `{"id":7,"method":"ping"}`, nil, false, []want{{"7", -32600}}},
		{"method missing", `{"jsonrpc":"2.0","id":"m"}`, nil, false, []want{{`"m"`, -32600}}},
		{"id an object", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, nil, false, []want{{"null", -32600}}},
		{"a bare number", `42`, nil, false, []want{{"null", -32600}}},
		{"empty batch", `[]`, nil, false, []want{{"null", -32600}}},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"prompts/list"}`, nil, false, []want{{"1", -32601}}},
		{"server/discover", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`, []string{"MCP-Protocol-Version", "2026-07-28"}, false, []want{{"1", -32601}}},
		{"string id round-trips", `{"jsonrpc":"2.0","id":"abc-1","method":"ping"}`, nil, false, []want{{`"abc-1"`, 0}}},
		{"number id round-trips exactly", `{"jsonrpc":"2.0","id":1.50,"method":"ping"}`, nil, false, []want{{"1.50", 0}}},
		{"null id is answered", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, nil, false, []want{{"null", 0}}},
		{"batch: requests and notifications, in order", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`,
			nil, true, []want{{"1", 0}, {"2", 0}}},
		{"batch with the 2025-06-18 header", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
			[]string{"MCP-Protocol-Version", "2025-06-18"}, true, []want{{"1", 0}, {"2", 0}}},
		{"batch of one", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, nil, true, []want{{"1", 0}}},
		{"batch: bad entries answered in place", `[1,{"jsonrpc":"2.0","id":2,"method":"ping"},"x",{"jsonrpc":"1.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"nope"}]`,
			nil, true, []want{{"null", -32600}, {"2", 0}, {"null", -32600}, {"3", -32600}, {"4", -32601}}},
		{"unknown tool", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"freeq_nothing","arguments":{}}}`, nil, false, []want{{"1", -32601}}},
		{"tools/call without params", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, nil, false, []want{{"1", -32602}}},
		{"history without channel", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"freeq_history","arguments":{}}}`, nil, false, []want{{"1", -32602}}},
		{"history without arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"freeq_history"}}`, nil, false, []want{{"1", -32602}}},
		{"search without q", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"freeq_search","arguments":{"channel":"#pub"}}}`, nil, false, []want{{"1", -32602}}},
		{"search with an empty q", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"freeq_search","arguments":{"channel":"#pub","q":""}}}`, nil, false, []want{{"1", -32602}}},
		{"verify without msgid", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"freeq_verify","arguments":{}}}`, nil, false, []want{{"1", -32602}}},
		{"pins without channel", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"freeq_pins","arguments":{"channel":7}}}`, nil, false, []want{{"1", -32602}}},
		{"limit 0", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"freeq_history","arguments":{"channel":"#pub","limit":0}}}`, nil, false, []want{{"1", -32602}}},
		{"limit 201", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"freeq_history","arguments":{"channel":"#pub","limit":201}}}`, nil, false, []want{{"1", -32602}}},
		{"limit 1.5", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"freeq_history","arguments":{"channel":"#pub","limit":1.5}}}`, nil, false, []want{{"1", -32602}}},
		{"unknown argument", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"freeq_channels","arguments":{"x":1}}}`, nil, false, []want{{"1", -32602}}},
		{"arguments not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"freeq_channels","arguments":[]}}`, nil, false, []want{{"1", -32602}}},
		{"resources/read without uri", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{}}`, nil, false, []want{{"1", -32602}}},
		{"resources/read unknown uri", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"freeq://server/nothing"}}`, nil, false, []want{{"1", -32002}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := e.post(t, tt.body, tt.header...)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			var got []rpcResponse
			if tt.batch {
				if err := json.Unmarshal(body, &got); err != nil {
					t.Fatalf("not an array: %s", body)
				}
			} else {
				var one rpcResponse
				if err := json.Unmarshal(body, &one); err != nil {
					t.Fatalf("not an object: %s", body)
				}
				got = []rpcResponse{one}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%d answers, want %d: %s", len(got), len(tt.want), body)
			}
			for i, w := range tt.want {
				g := got[i]
				if g.JSONRPC != "2.0" || string(g.ID) != w.id {
					t.Errorf("answer %d: jsonrpc %q id %s, want id %s", i, g.JSONRPC, g.ID, w.id)
				}
				switch {
				case w.code == 0 && (g.Error != nil || g.Result == nil):
					t.Errorf("answer %d: want a result: %s", i, body)
				case w.code != 0 && (g.Error == nil || g.Error.Code != w.code || g.Error.Message == "" || g.Result != nil):
					t.Errorf("answer %d: want error %d: %s", i, w.code, body)
				}
			}
		})
	}
}

// TestInitializeAnswers2025_06_18 whatever the client asks.
// TestInitializeNegotiatesTheVersion: initialize answers the version asked for when it is
// 2025-11-25 or 2025-06-18, and the latest otherwise.
func TestInitializeNegotiatesTheVersion(t *testing.T) {
	e := newEndpoint(t, mcp.Config{})
	for _, asked := range []string{"2025-06-18", "2025-11-25", "2024-11-05", "2026-07-28", "1999-01-01", ""} {
		r := e.call(t, "initialize", `{"protocolVersion":"`+asked+`","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
		var res struct {
			ProtocolVersion string                         `json:"protocolVersion"`
			Capabilities    map[string]json.RawMessage     `json:"capabilities"`
			ServerInfo      struct{ Name, Version string } `json:"serverInfo"`
			Instructions    string                         `json:"instructions"`
		}
		if r.Error != nil || json.Unmarshal(r.Result, &res) != nil {
			t.Fatalf("asked %q: %+v", asked, r)
		}
		want := mcp.ProtocolVersion
		if asked == "2025-06-18" || asked == "2025-11-25" {
			want = asked
		}
		if res.ProtocolVersion != want || res.Capabilities["tools"] == nil || res.Capabilities["resources"] == nil ||
			res.ServerInfo.Name == "" || res.ServerInfo.Version != "0.1.0" || !strings.Contains(res.Instructions, "/auth.md") {
			t.Fatalf("asked %q: %s", asked, r.Result)
		}
	}
}

func TestToolsList(t *testing.T) {
	e := newEndpoint(t, mcp.Config{})
	r := e.call(t, "tools/list", "")
	var res struct {
		Tools []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			InputSchema struct {
				Type                 string         `json:"type"`
				Properties           map[string]any `json:"properties"`
				Required             []string       `json:"required"`
				AdditionalProperties *bool          `json:"additionalProperties"`
			} `json:"inputSchema"`
			Annotations struct {
				ReadOnlyHint bool `json:"readOnlyHint"`
			} `json:"annotations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"freeq_channels": nil, "freeq_history": {"channel"}, "freeq_search": {"channel", "q"}, "freeq_verify": {"msgid"}, "freeq_pins": {"channel"}}
	if len(res.Tools) != len(want) {
		t.Fatalf("%d tools", len(res.Tools))
	}
	for _, tl := range res.Tools {
		req, ok := want[tl.Name]
		if !ok || tl.Description == "" || tl.InputSchema.Type != "object" || tl.InputSchema.AdditionalProperties == nil ||
			*tl.InputSchema.AdditionalProperties || !tl.Annotations.ReadOnlyHint || strings.Join(tl.InputSchema.Required, ",") != strings.Join(req, ",") {
			t.Errorf("tool %+v", tl)
		}
	}
}

// TestToolsRunTheRESTRoutes: results come from the REST routes, with the
// caller's bearer deciding what restricted channels it reads.
func TestToolsRunTheRESTRoutes(t *testing.T) {
	e := newEndpoint(t, mcp.Config{})
	alice := []string{"Authorization", "Bearer alice-token"}
	mallory := []string{"Authorization", "Bearer mallory-token"}
	texts := func(r toolResult) []string {
		var out []string
		for _, m := range r.StructuredContent["messages"].([]any) {
			out = append(out, m.(map[string]any)["text"].(string))
		}
		return out
	}
	tests := []struct {
		name, tool, args string
		header           []string
		check            func(t *testing.T, r toolResult)
	}{
		{"channels: public only", "freeq_channels", `{}`, nil, func(t *testing.T, r toolResult) {
			chans := r.StructuredContent["channels"].([]any)
			if r.IsError || len(chans) != 1 || chans[0].(map[string]any)["name"] != "#pub" {
				t.Fatalf("%+v", r)
			}
		}},
		{"history of a public channel", "freeq_history", `{"channel":"#pub"}`, nil, func(t *testing.T, r toolResult) {
			if got := strings.Join(texts(r), "|"); r.IsError || got != "apples and pears|more apples|bananas" || r.StructuredContent["channel"] != "#pub" {
				t.Fatalf("%q %+v", got, r)
			}
		}},
		{"history without # and with a limit", "freeq_history", `{"channel":"pub","limit":1}`, nil, func(t *testing.T, r toolResult) {
			if got := strings.Join(texts(r), "|"); r.IsError || got != "bananas" {
				t.Fatalf("%q", got)
			}
		}},
		{"history before a time", "freeq_history", `{"channel":"#pub","before":1772366402}`, nil, func(t *testing.T, r toolResult) {
			if got := strings.Join(texts(r), "|"); r.IsError || got != "apples and pears|more apples" {
				t.Fatalf("%q", got)
			}
		}},
		{"restricted channel, anonymous", "freeq_history", `{"channel":"#secret"}`, nil, refused("Forbidden", "invite-only")},
		{"restricted channel, a member's bearer", "freeq_history", `{"channel":"#secret"}`, alice, func(t *testing.T, r toolResult) {
			if got := strings.Join(texts(r), "|"); r.IsError || got != "the secret plan" {
				t.Fatalf("%q %+v", got, r)
			}
		}},
		{"restricted channel, a non-member's bearer", "freeq_history", `{"channel":"#secret"}`, mallory, refused("Forbidden", "member")},
		{"a dead bearer", "freeq_channels", `{}`, []string{"Authorization", "Bearer expired"}, refused("Unauthorized", "/auth.md")},
		{"unknown channel", "freeq_history", `{"channel":"#nowhere"}`, nil, refused("Not found", "#nowhere")},
		{"bad channel name", "freeq_pins", `{"channel":"#a b"}`, nil, refused("Bad request", "")},
		{"search", "freeq_search", `{"channel":"#pub","q":"apples"}`, nil, func(t *testing.T, r toolResult) {
			if got := strings.Join(texts(r), "|"); r.IsError || got != "more apples|apples and pears" {
				t.Fatalf("%q", got)
			}
		}},
		{"search a restricted channel, anonymous", "freeq_search", `{"channel":"#secret","q":"plan"}`, nil, refused("Forbidden", "")},
		{"search a restricted channel, a member", "freeq_search", `{"channel":"#secret","q":"plan"}`, alice, func(t *testing.T, r toolResult) {
			if got := strings.Join(texts(r), "|"); r.IsError || got != "the secret plan" {
				t.Fatalf("%q", got)
			}
		}},
		{"pins", "freeq_pins", `{"channel":"#pub"}`, nil, func(t *testing.T, r toolResult) {
			pins, _ := r.StructuredContent["pins"].([]any)
			if r.IsError || len(pins) != 1 || pins[0].(map[string]any)["text"] != "apples and pears" {
				t.Fatalf("%+v", r)
			}
		}},
		{"pins of a restricted channel, anonymous", "freeq_pins", `{"channel":"#secret"}`, nil, refused("Forbidden", "")},
		// The verify route belongs to the signing API, not mounted here: the
		// REST 404 comes back as a refusal.
		{"verify where the route is missing", "freeq_verify", `{"msgid":"01J00000000000000000000000"}`, nil, refused("Not found", "No such endpoint")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, e.tool(t, tt.tool, tt.args, tt.header...))
		})
	}
}

func refused(prefix, contains string) func(t *testing.T, r toolResult) {
	return func(t *testing.T, r toolResult) {
		t.Helper()
		text := r.Content[0].Text
		if !r.IsError || !strings.HasPrefix(text, prefix) || !strings.Contains(text, contains) {
			t.Fatalf("want a refusal %q…%q, got isError=%v %q", prefix, contains, r.IsError, text)
		}
	}
}

// TestEachBatchEntryIsLimited: every request entry counts, so a batch
// cannot run more calls than the limit allows.
func TestEachBatchEntryIsLimited(t *testing.T) {
	e := newEndpoint(t, mcp.Config{Limit: rest.RateLimit{Requests: 3, Window: time.Hour}})
	batch := `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},` +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"freeq_channels","arguments":{}}},` +
		`{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","id":5,"method":"tools/list"}]`
	resp, body := e.post(t, batch)
	var got []rpcResponse
	if err := json.Unmarshal(body, &got); err != nil || len(got) != 5 {
		t.Fatalf("%v: %s", err, body)
	}
	for i, r := range got {
		limited := r.Error != nil && r.Error.Code == -32000 && strings.Contains(string(r.Error.Data), `"retry_after"`)
		if (i < 3) == limited {
			t.Errorf("entry %d (id %s): limited=%v: %s", i, r.ID, limited, body)
		}
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
	if r := e.call(t, "ping", ""); r.Error == nil || r.Error.Code != -32000 {
		t.Fatalf("the next request passed: %+v", r)
	}
}

func TestResources(t *testing.T) {
	e := newEndpoint(t, mcp.Config{})
	r := e.call(t, "resources/list", "")
	var list struct {
		Resources []struct{ URI, Name, MimeType string } `json:"resources"`
	}
	if err := json.Unmarshal(r.Result, &list); err != nil || len(list.Resources) != 4 {
		t.Fatalf("%v %s", err, r.Result)
	}
	want := map[string]string{"openapi.json": `"openapi":"3.1.0"`, "llms.txt": "# Palaver", "agents.md": "## Restricted channels", "auth.md": "API-BEARER"}
	for _, res := range list.Resources {
		r := e.call(t, "resources/read", `{"uri":"`+res.URI+`"}`)
		var read struct {
			Contents []struct{ URI, MimeType, Text string } `json:"contents"`
		}
		if err := json.Unmarshal(r.Result, &read); err != nil || len(read.Contents) != 1 {
			t.Fatalf("%s: %v %+v", res.URI, err, r)
		}
		c := read.Contents[0]
		if c.URI != res.URI || c.MimeType != res.MimeType || !strings.Contains(c.Text, want[res.Name]) {
			t.Errorf("%s: %s %q", res.URI, c.MimeType, c.Text[:min(len(c.Text), 80)])
		}
	}
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestEachEntryIsLogged: every entry of a batch leaves its own record.
func TestEachEntryIsLogged(t *testing.T) {
	var logs syncBuffer
	e := newEndpoint(t, mcp.Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	e.post(t, `[{"jsonrpc":"2.0","id":"one","method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},`+
		`{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"freeq_history","arguments":{"channel":"#secret"}}},{"jsonrpc":"1.0","id":"three","method":"ping"}]`)
	for _, want := range []string{`method=ping id="\"one\"" code=0`, `method=notifications/initialized id="" code=0`,
		`method=tools/call id="\"two\"" code=0`, `method="" id="\"three\"" code=-32600`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no record %s in\n%s", want, logs.String())
		}
	}
	if n := strings.Count(logs.String(), "mcp entry"); n != 4 {
		t.Errorf("%d records, want 4", n)
	}
}
