package rest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/gateway/rest"
)

const wantCSP = "default-src 'self'; script-src 'self' blob:; style-src 'self' 'unsafe-inline'; img-src 'self' https: data: blob:; media-src 'self' https: blob:; connect-src 'self' wss: https:; worker-src 'self' blob:; frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'"

const wantLink = `</api/v1/openapi.json>; rel="service-desc"; type="application/json", </llms.txt>; rel="describedby"; type="text/markdown", </agents.md>; rel="alternate"; type="text/markdown"`

const wantWWWAuthenticate = `Bearer resource_metadata="` + testBaseURL + `/.well-known/oauth-protected-resource"`

// withTestRoutes mounts routes that produce the statuses no base route does.
func withTestRoutes(ts *testServer) *testServer {
	e := ts.Engine()
	e.GET("/test/panic", func(c *gin.Context) { panic("secret internal detail") })
	e.GET("/api/v1/test/panic", func(c *gin.Context) { panic("secret internal detail") })
	e.GET("/api/v1/test/limited", func(c *gin.Context) { rest.WriteError(c, http.StatusTooManyRequests, "slow down") })
	e.GET("/api/v1/test/limited-own", func(c *gin.Context) {
		c.Header("Retry-After", "5")
		c.AbortWithStatus(http.StatusTooManyRequests)
	})
	e.GET("/api/v1/test/unauthorized", func(c *gin.Context) { c.AbortWithStatus(http.StatusUnauthorized) })
	e.GET("/test/own-csp", func(c *gin.Context) {
		c.Header("Content-Security-Policy", "default-src 'none'")
		c.String(http.StatusOK, "ok")
	})
	e.GET("/test/write", func(c *gin.Context) { c.Writer.Write([]byte("raw")) })
	return ts
}

func TestEveryResponseCarriesCommonHeaders(t *testing.T) {
	ts := withTestRoutes(newTestServer(t, nil))
	tests := []struct {
		name, method, path string
		wantStatus         int
		wantCSP            string
		extra              map[string]string
	}{
		{"health", "GET", "/api/v1/health", 200, wantCSP, nil},
		{"unknown api path", "GET", "/api/v1/nope", 404, wantCSP, nil},
		{"unknown page", "GET", "/nope", 404, wantCSP, nil},
		{"trailing slash is not redirected", "GET", "/api/v1/health/", 404, wantCSP, nil},
		{"wrong method", "POST", "/api/v1/health", 405, wantCSP, map[string]string{"Allow": "GET"}},
		{"wrong method on favorites", "DELETE", "/api/v1/favorites", 405, wantCSP, map[string]string{"Allow": "GET, PUT"}},
		{"panic", "GET", "/test/panic", 500, wantCSP, nil},
		{"missing bearer", "GET", "/api/v1/favorites", 401, wantCSP, map[string]string{"WWW-Authenticate": wantWWWAuthenticate}},
		{"bare 401 gets the challenge", "GET", "/api/v1/test/unauthorized", 401, wantCSP, map[string]string{"WWW-Authenticate": wantWWWAuthenticate}},
		{"429 gets Retry-After 60", "GET", "/api/v1/test/limited", 429, wantCSP, map[string]string{"Retry-After": "60"}},
		{"429 keeps its own Retry-After", "GET", "/api/v1/test/limited-own", 429, wantCSP, map[string]string{"Retry-After": "5"}},
		{"handler's own CSP kept", "GET", "/test/own-csp", 200, "default-src 'none'", nil},
		{"raw write", "GET", "/test/write", 200, wantCSP, nil},
		{"preflight", "OPTIONS", "/api/v1/favorites", 204, wantCSP, nil},
		{"metrics", "GET", "/metrics", 200, wantCSP, nil},
		{"protected resource", "GET", "/.well-known/oauth-protected-resource", 200, wantCSP, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := ts.do(tt.method, tt.path, "")
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d; body %q", rec.Code, tt.wantStatus, rec.Body.String())
			}
			want := map[string]string{
				"X-Content-Type-Options":    "nosniff",
				"X-Frame-Options":           "DENY",
				"Referrer-Policy":           "strict-origin-when-cross-origin",
				"Strict-Transport-Security": "max-age=63072000; includeSubDomains; preload",
				"Content-Security-Policy":   tt.wantCSP,
				"Link":                      wantLink,
			}
			for k, v := range tt.extra {
				want[k] = v
			}
			for k, v := range want {
				if got := rec.Header().Values(k); len(got) != 1 || got[0] != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestErrorObjects(t *testing.T) {
	ts := withTestRoutes(newTestServer(t, nil))
	tests := []struct {
		method, path string
		wantStatus   int
		wantMessage  string
	}{
		{"GET", "/api/v1/nope", 404, "No such endpoint: /api/v1/nope"},
		{"GET", "/api", 404, "No such endpoint: /api"},
		{"GET", "/api/v2/channels", 404, "No such endpoint: /api/v2/channels"},
		{"PUT", "/api/v1/health", 405, ""},
		{"POST", "/metrics", 405, ""},
		{"GET", "/api/v1/test/panic", 500, "Internal Server Error"},
		{"GET", "/test/panic", 500, "Internal Server Error"},
		{"GET", "/api/v1/test/limited", 429, "slow down"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			rec := ts.do(tt.method, tt.path, "")
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d", rec.Code, tt.wantStatus)
			}
			e := decodeError(t, rec)
			if tt.wantMessage != "" && e.Message != tt.wantMessage {
				t.Fatalf("message %q, want %q", e.Message, tt.wantMessage)
			}
			if strings.Contains(rec.Body.String(), "secret") || strings.Contains(rec.Body.String(), "goroutine") {
				t.Fatalf("body leaks internals: %s", rec.Body.String())
			}
		})
	}
	if logs := ts.logs.String(); !strings.Contains(logs, "secret internal detail") || !strings.Contains(logs, "stack=") {
		t.Fatalf("panic not logged with its stack:\n%s", logs)
	}
}

func TestUnknownPageIsMarkdown(t *testing.T) {
	ts := newTestServer(t, nil)
	rec := ts.do("GET", "/no/such`page", "")
	if rec.Code != http.StatusNotFound {
		t.Fatalf("status %d", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "text/markdown; charset=utf-8" {
		t.Fatalf("Content-Type %q", ct)
	}
	body := rec.Body.String()
	if !strings.Contains(body, testBaseURL+"/llms.txt") || !strings.Contains(body, "`/no/suchpage`") {
		t.Fatalf("body %q", body)
	}
}

func TestErrorWithoutBaseURLUsesRequestHost(t *testing.T) {
	ts := newTestServer(t, func(c *rest.Config) { c.BaseURL = "" })
	req := ts.do("GET", "/api/v1/favorites", "")
	if got := req.Header().Get("WWW-Authenticate"); got != `Bearer resource_metadata="http://example.com/.well-known/oauth-protected-resource"` {
		t.Fatalf("WWW-Authenticate %q", got)
	}
	var e rest.ErrorObject
	if err := jsonUnmarshal(req.Body.Bytes(), &e); err != nil || e.Documentation != "http://example.com/api/v1/openapi.json" {
		t.Fatalf("documentation %q (%v)", e.Documentation, err)
	}
}
