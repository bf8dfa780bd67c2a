package rest_test

import (
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"
)

func TestCORS(t *testing.T) {
	ts := newTestServer(t, nil)
	tests := []struct {
		name, method, origin string
		wantAllowed          bool
		wantStatus           int
	}{
		{"configured auth host", "GET", "https://auth.example.test", true, 200},
		{"configured site host with default port dropped", "GET", "https://example.test", true, 200},
		{"service host from base url", "GET", testBaseURL, true, 200},
		{"localhost any port", "GET", "http://localhost:5173", true, 200},
		{"localhost https", "GET", "https://localhost", true, 200},
		{"loopback ip any port", "GET", "http://127.0.0.1:9999", true, 200},
		{"foreign origin", "GET", "https://evil.example.test", false, 200},
		{"localhost lookalike", "GET", "http://localhost.evil.test", false, 200},
		{"wrong scheme", "GET", "ftp://localhost", false, 200},
		{"null origin", "GET", "null", false, 200},
		{"configured host on other port", "GET", "https://auth.example.test:8443", false, 200},
		{"no origin", "GET", "", false, 200},
		{"preflight allowed", "OPTIONS", "http://localhost:3000", true, 204},
		{"preflight denied", "OPTIONS", "https://evil.example.test", false, 204},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header := []string{}
			if tt.origin != "" {
				header = append(header, "Origin", tt.origin)
			}
			if tt.method == "OPTIONS" {
				header = append(header, "Access-Control-Request-Method", "PUT", "Access-Control-Request-Headers", "authorization,content-type")
			}
			rec := ts.do(tt.method, "/api/v1/health", "", header...)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d", rec.Code, tt.wantStatus)
			}
			h := rec.Header()
			gotOrigin := h.Get("Access-Control-Allow-Origin")
			if tt.wantAllowed {
				if gotOrigin != tt.origin || h.Get("Access-Control-Allow-Credentials") != "true" {
					t.Fatalf("allow-origin %q credentials %q", gotOrigin, h.Get("Access-Control-Allow-Credentials"))
				}
			} else if gotOrigin != "" || h.Get("Access-Control-Allow-Credentials") != "" {
				t.Fatalf("refused origin got CORS headers: %v", h)
			}
			if h.Get("Vary") != "Origin" {
				t.Fatalf("Vary %q", h.Values("Vary"))
			}
			if tt.method == "OPTIONS" && tt.wantAllowed {
				if h.Get("Access-Control-Allow-Methods") != "GET, POST, PUT, OPTIONS" ||
					h.Get("Access-Control-Allow-Headers") != "Content-Type, Authorization" {
					t.Fatalf("preflight headers %v", h)
				}
			}
			if tt.method == "OPTIONS" && rec.Body.Len() != 0 {
				t.Fatalf("preflight body %q", rec.Body.String())
			}
		})
	}
}

func TestCORSOnErrors(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, path := range []string{"/api/v1/nope", "/api/v1/favorites"} {
		rec := ts.do(http.MethodGet, path, "", "Origin", "http://localhost:5173")
		if rec.Header().Get("Access-Control-Allow-Origin") != "http://localhost:5173" {
			t.Errorf("%s: no CORS on %d", path, rec.Code)
		}
	}
}

func TestExemptFromCORS(t *testing.T) {
	ts := newTestServer(t, nil)
	e := ts.Engine()
	anyOrigin := func(c *gin.Context) {
		c.Header("Access-Control-Allow-Origin", "*")
		if c.Request.Method == http.MethodOptions {
			c.Header("Access-Control-Allow-Headers", "mcp-session-id")
			c.AbortWithStatus(http.StatusNoContent)
			return
		}
		c.String(http.StatusOK, "ok")
	}
	e.POST("/mcp", anyOrigin)
	e.OPTIONS("/mcp", anyOrigin)
	ts.ExemptFromCORS("/mcp")

	rec := ts.do(http.MethodOptions, "/mcp", "", "Origin", "https://evil.example.test", "Access-Control-Request-Method", "POST")
	if rec.Code != http.StatusNoContent || rec.Header().Get("Access-Control-Allow-Origin") != "*" ||
		rec.Header().Get("Access-Control-Allow-Headers") != "mcp-session-id" || rec.Header().Get("Access-Control-Allow-Credentials") != "" {
		t.Fatalf("exempt preflight: %d %v", rec.Code, rec.Header())
	}
	rec = ts.do(http.MethodPost, "/mcp", "{}", "Origin", "http://localhost:1")
	if rec.Header().Get("Access-Control-Allow-Origin") != "*" || rec.Header().Get("X-Frame-Options") != "DENY" {
		t.Fatalf("exempt route: %v", rec.Header())
	}
}
