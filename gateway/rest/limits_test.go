package rest_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/gateway/rest"
)

// eternity is a rate-limit window no test run can cross.
const eternity = 100000 * time.Hour

// fromPeer sends a GET from a given TCP peer with extra headers.
func fromPeer(ts *testServer, target, peer string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", target, nil)
	req.RemoteAddr = peer
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	ts.Handler().ServeHTTP(rec, req)
	return rec
}

// limitedServer mounts test-only routes behind each limiter class.
func limitedServer(t *testing.T, limits rest.RateLimits, trustedProxies ...string) *testServer {
	ts := newTestServer(t, func(c *rest.Config) { c.RateLimits, c.TrustedProxies = limits, trustedProxies })
	ok := func(c *gin.Context) { c.String(http.StatusOK, "ok") }
	ts.Engine().GET("/api/v1/test/media", ts.RateLimit(rest.MediaRoutes), ok)
	ts.Engine().GET("/api/v1/test/records", ts.RateLimit(rest.RecordRoutes), ok)
	return ts
}

func TestRateLimit(t *testing.T) {
	ts := limitedServer(t, rest.RateLimits{
		Media:   rest.RateLimit{Requests: 2, Window: eternity},
		Records: rest.RateLimit{Requests: 3, Window: eternity},
	}, "127.0.0.1", "::1")
	tests := []struct {
		name, target, peer string
		header             []string
		want               int
	}{
		{"first", "/api/v1/test/media", "192.0.2.1:1000", nil, 200},
		{"second", "/api/v1/test/media", "192.0.2.1:1001", nil, 200},
		{"third is over", "/api/v1/test/media", "192.0.2.1:1002", nil, 429},
		{"another client", "/api/v1/test/media", "192.0.2.2:1000", nil, 200},
		{"another class", "/api/v1/test/records", "192.0.2.1:1000", nil, 200},
		{"headers from a remote peer are ignored", "/api/v1/test/media", "192.0.2.1:1003", []string{"X-Real-IP", "198.51.100.9"}, 429},
		{"a trusted proxy's X-Real-IP counts", "/api/v1/test/media", "127.0.0.1:5000", []string{"X-Real-IP", "198.51.100.9"}, 200},
		{"again", "/api/v1/test/media", "127.0.0.1:5001", []string{"X-Real-IP", "198.51.100.9"}, 200},
		{"then over", "/api/v1/test/media", "127.0.0.1:5002", []string{"X-Real-IP", "198.51.100.9"}, 429},
		{"last X-Forwarded-For entry", "/api/v1/test/media", "[::1]:5000", []string{"X-Forwarded-For", "198.51.100.9, 203.0.113.5"}, 200},
		{"IPv6 counted per /64", "/api/v1/test/media", "[2001:db8::1]:1", nil, 200},
		{"same /64", "/api/v1/test/media", "[2001:db8::2]:1", nil, 200},
		{"same /64 over", "/api/v1/test/media", "[2001:db8::3]:1", nil, 429},
		{"another /64", "/api/v1/test/media", "[2001:db8:0:1::1]:1", nil, 200},
	}
	for _, tt := range tests {
		rec := fromPeer(ts, tt.target, tt.peer, tt.header...)
		if rec.Code != tt.want {
			t.Fatalf("%s: status %d, want %d", tt.name, rec.Code, tt.want)
		}
		if rec.Code == http.StatusTooManyRequests {
			retry, err := strconv.Atoi(rec.Header().Get("Retry-After"))
			if err != nil || retry < 1 || time.Duration(retry)*time.Second > eternity {
				t.Fatalf("%s: Retry-After %q", tt.name, rec.Header().Get("Retry-After"))
			}
			decodeError(t, rec)
		}
	}
}

// TestForwardedHeadersNeedATrustedProxy: X-Real-IP and X-Forwarded-For name the client only when
// the TCP peer is a configured proxy; loopback is not one by default.
func TestForwardedHeadersNeedATrustedProxy(t *testing.T) {
	limits := rest.RateLimits{Media: rest.RateLimit{Requests: 1, Window: eternity}}
	tests := []struct {
		name    string
		trusted []string
		peer    string
		header  []string
		want    int // the second request's status, from another claimed client
	}{
		{"loopback untrusted by default", nil, "127.0.0.1:1", []string{"X-Real-IP", "198.51.100.%d"}, 429},
		{"loopback X-Forwarded-For untrusted by default", nil, "[::1]:1", []string{"X-Forwarded-For", "198.51.100.%d"}, 429},
		{"trusted loopback proxy", []string{"127.0.0.1"}, "127.0.0.1:1", []string{"X-Real-IP", "198.51.100.%d"}, 200},
		{"trusted proxy prefix", []string{"10.0.0.0/8"}, "10.1.2.3:1", []string{"X-Forwarded-For", "198.51.100.%d"}, 200},
		{"peer outside the trusted prefix", []string{"10.0.0.0/8"}, "192.0.2.1:1", []string{"X-Real-IP", "198.51.100.%d"}, 429},
		{"trusting ::1 does not trust 127.0.0.1", []string{"::1"}, "127.0.0.1:1", []string{"X-Real-IP", "198.51.100.%d"}, 429},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := limitedServer(t, limits, tt.trusted...)
			for i, want := range []int{200, tt.want} {
				header := []string{tt.header[0], strings.ReplaceAll(tt.header[1], "%d", strconv.Itoa(i+1))}
				if rec := fromPeer(ts, "/api/v1/test/media", tt.peer, header...); rec.Code != want {
					t.Fatalf("request %d: status %d, want %d", i+1, rec.Code, want)
				}
			}
		})
	}
}

// TestActorLookupLimited: each actor lookup may resolve a DID document, so
// the route counts against the client's record limit.
func TestActorLookupLimited(t *testing.T) {
	ts := limitedServer(t, rest.RateLimits{Records: rest.RateLimit{Requests: 2, Window: eternity}})
	for i, want := range []int{404, 404, 429} {
		if rec := fromPeer(ts, "/api/v1/actors/did:web:unknown"+strconv.Itoa(i)+".example", "192.0.2.7:1"); rec.Code != want {
			t.Fatalf("lookup %d: status %d, want %d", i, rec.Code, want)
		}
	}
	if rec := fromPeer(ts, "/api/v1/actors/did:web:unknown.example", "192.0.2.8:1"); rec.Code != 404 {
		t.Fatalf("another client: status %d, want 404", rec.Code)
	}
}

func TestRateLimitDefaultsAndOff(t *testing.T) {
	ts := limitedServer(t, rest.RateLimits{})
	for i := range rest.DefaultMediaLimit.Requests {
		if rec := fromPeer(ts, "/api/v1/test/media", "192.0.2.9:1"); rec.Code != 200 {
			t.Fatalf("request %d: %d", i, rec.Code)
		}
	}
	// The default window is a minute: the next request is refused unless
	// that minute just ended.
	if rec := fromPeer(ts, "/api/v1/test/media", "192.0.2.9:1"); rec.Code != 429 && rec.Code != 200 {
		t.Fatalf("over the default: %d", rec.Code)
	}
	off := limitedServer(t, rest.RateLimits{Off: true, Media: rest.RateLimit{Requests: 1, Window: eternity}})
	for i := range 50 {
		if rec := fromPeer(off, "/api/v1/test/media", "192.0.2.9:1"); rec.Code != 200 {
			t.Fatalf("limits off, request %d: %d", i, rec.Code)
		}
	}
}

func TestRetiredVersion(t *testing.T) {
	ts := newTestServer(t, nil)
	deprecated := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	valid := rest.RetiredVersion{Prefix: "/api/v0", Deprecated: deprecated, Sunset: deprecated.Add(120 * 24 * time.Hour), Link: testBaseURL + "/llms.txt"}
	for name, v := range map[string]rest.RetiredVersion{
		"bad prefix":    {Prefix: "/v0", Deprecated: valid.Deprecated, Sunset: valid.Sunset, Link: valid.Link},
		"short notice":  {Prefix: "/api/v0", Deprecated: deprecated, Sunset: deprecated.Add(89 * 24 * time.Hour), Link: valid.Link},
		"no sunset":     {Prefix: "/api/v0", Deprecated: deprecated, Link: valid.Link},
		"no link":       {Prefix: "/api/v0", Deprecated: deprecated, Sunset: valid.Sunset},
		"trailing path": {Prefix: "/api/v0/", Deprecated: deprecated, Sunset: valid.Sunset, Link: valid.Link},
	} {
		if err := ts.Retire(v); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := ts.Retire(valid); err != nil {
		t.Fatal(err)
	}
	// A test-only route stands for the retired version.
	ts.Engine().GET("/api/v0/ping", func(c *gin.Context) { c.String(http.StatusOK, "pong") })
	for _, target := range []string{"/api/v0/ping", "/api/v0/unknown"} {
		rec := ts.do("GET", target, "")
		if got := rec.Header().Get("Deprecation"); got != "@1767225600" {
			t.Errorf("%s: Deprecation %q", target, got)
		}
		if got := rec.Header().Get("Sunset"); got != "Fri, 01 May 2026 00:00:00 GMT" {
			t.Errorf("%s: Sunset %q", target, got)
		}
		if links := strings.Join(rec.Header().Values("Link"), ", "); !strings.Contains(links, "<"+valid.Link+`>; rel="deprecation"`) ||
			!strings.Contains(links, `rel="service-desc"`) {
			t.Errorf("%s: Link %q", target, links)
		}
	}
	for _, target := range []string{"/api/v1/health", "/api/v00/x", "/api/v0x"} {
		if rec := ts.do("GET", target, ""); rec.Header().Get("Deprecation") != "" || rec.Header().Get("Sunset") != "" {
			t.Errorf("%s carries retirement headers", target)
		}
	}
}
