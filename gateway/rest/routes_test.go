package rest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/gateway/rest"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func TestHealth(t *testing.T) {
	tests := []struct {
		name   string
		adjust func(*rest.Config)
		want   map[string]any
	}{
		{"from source", nil, map[string]any{
			"server_name": "palaver.example.test", "connections": 3.0, "channels": 2.0, "uptime_secs": 99.0,
			"av": false, "version": "0.1.0", "node": "n1", "role": "leader", "term": 4.0,
		}},
		{"without source", func(c *rest.Config) { c.Health = nil }, map[string]any{
			"server_name": "palaver.example.test", "connections": 0.0, "av": false,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newTestServer(t, tt.adjust).do("GET", "/api/v1/health", "")
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d", rec.Code)
			}
			var got map[string]any
			if err := jsonUnmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
		})
	}
}

func TestProtectedResourceMetadata(t *testing.T) {
	rec := newTestServer(t, nil).do("GET", "/.well-known/oauth-protected-resource", "")
	var got struct {
		Resource               string   `json:"resource"`
		AuthorizationServers   []string `json:"authorization_servers"`
		BearerMethodsSupported []string `json:"bearer_methods_supported"`
		ResourceDocumentation  string   `json:"resource_documentation"`
	}
	if err := jsonUnmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Resource != testBaseURL || got.AuthorizationServers == nil || len(got.AuthorizationServers) != 0 ||
		len(got.BearerMethodsSupported) != 1 || got.BearerMethodsSupported[0] != "header" ||
		got.ResourceDocumentation != testBaseURL+"/auth.md" {
		t.Fatalf("metadata %s", rec.Body.String())
	}
	if !strings.Contains(rec.Body.String(), `"authorization_servers":[]`) {
		t.Fatalf("authorization_servers not an empty array: %s", rec.Body.String())
	}
}

func TestBearer(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.Engine().GET("/api/v1/test/whoami", ts.OptionalBearer(), func(c *gin.Context) {
		c.String(http.StatusOK, "did=%s", rest.DID(c))
	})
	tests := []struct {
		name, path, auth string
		wantStatus       int
		wantChallenge    string
		wantBody         string
	}{
		{"no header", "/api/v1/favorites", "", 401, wantWWWAuthenticate, ""},
		{"basic scheme", "/api/v1/favorites", "Basic dXNlcjpwYXNz", 401, wantWWWAuthenticate, ""},
		{"unknown token", "/api/v1/favorites", "Bearer stale", 401, wantWWWAuthenticate + `, error="invalid_token"`, ""},
		{"empty token", "/api/v1/favorites", "Bearer ", 401, wantWWWAuthenticate + `, error="invalid_token"`, ""},
		{"good token", "/api/v1/favorites", "Bearer good-token", 200, "", `{"favorites":[]}`},
		{"scheme is case-insensitive", "/api/v1/favorites", "bearer good-token", 200, "", `{"favorites":[]}`},
		{"optional: anonymous", "/api/v1/test/whoami", "", 200, "", "did="},
		{"optional: good token", "/api/v1/test/whoami", "Bearer good-token", 200, "", "did=did:key:z6MkAlice"},
		{"optional: dead token", "/api/v1/test/whoami", "Bearer stale", 401, wantWWWAuthenticate + `, error="invalid_token"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var header []string
			if tt.auth != "" {
				header = []string{"Authorization", tt.auth}
			}
			rec := ts.do("GET", tt.path, "", header...)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d", rec.Code, tt.wantStatus)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != tt.wantChallenge {
				t.Fatalf("WWW-Authenticate %q, want %q", got, tt.wantChallenge)
			}
			if tt.wantStatus == http.StatusUnauthorized {
				decodeError(t, rec)
			} else if strings.TrimSpace(rec.Body.String()) != tt.wantBody {
				t.Fatalf("body %q, want %q", rec.Body.String(), tt.wantBody)
			}
		})
	}
}

func TestFavoritesRoundTrip(t *testing.T) {
	ts := newTestServer(t, nil)
	auth := []string{"Authorization", "Bearer good-token", "Content-Type", "application/json"}
	long := "#" + strings.Repeat("x", 64)
	body := `{"favorites":["#Palaver","&Local","plain","` + long + `","#palaver","#ok",42,null,"#a b","#Ünï"]}`
	rec := ts.do("PUT", "/api/v1/favorites", body, auth...)
	if rec.Code != http.StatusOK {
		t.Fatalf("PUT status %d: %s", rec.Code, rec.Body.String())
	}
	want := `{"favorites":["#palaver","&local","#ok","#Ünï"]}`
	if strings.TrimSpace(rec.Body.String()) != want {
		t.Fatalf("PUT answered %s, want %s", rec.Body.String(), want)
	}
	if got := ts.favorites.Favorites("did:key:z6MkAlice"); strings.Join(got, ",") != "#palaver,&local,#ok,#Ünï" {
		t.Fatalf("store holds %q", got)
	}
	rec = ts.do("GET", "/api/v1/favorites", "", auth...)
	if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != want {
		t.Fatalf("GET %d %s", rec.Code, rec.Body.String())
	}
	rec = ts.do("PUT", "/api/v1/favorites", `{"favorites":[]}`, auth...)
	if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != `{"favorites":[]}` {
		t.Fatalf("clearing: %d %s", rec.Code, rec.Body.String())
	}
}

func TestFavoritesErrors(t *testing.T) {
	auth := []string{"Authorization", "Bearer good-token"}
	tests := []struct {
		name       string
		adjust     func(*rest.Config)
		body       string
		wantStatus int
	}{
		{"malformed json", nil, `{"favorites":[`, 400},
		{"not json", nil, `favorites=#a`, 400},
		{"missing list", nil, `{}`, 400},
		{"null list", nil, `{"favorites":null}`, 400},
		{"list not an array", nil, `{"favorites":"#a"}`, 400},
		{"trailing data", nil, `{"favorites":[]} {}`, 400},
		{"empty body", nil, ``, 400},
		{"too large", nil, `{"favorites":["` + strings.Repeat("#", 70000) + `"]}`, 413},
		{"store fails", func(c *rest.Config) { c.Favorites = &fakeFavorites{failWith: errStoreDown} }, `{"favorites":["#a"]}`, 503},
		{"no store", func(c *rest.Config) { c.Favorites = nil }, `{"favorites":["#a"]}`, 503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newTestServer(t, tt.adjust).do("PUT", "/api/v1/favorites", tt.body, auth...)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.wantStatus, rec.Body.String())
			}
			decodeError(t, rec)
		})
	}
	rec := newTestServer(t, func(c *rest.Config) { c.Favorites = nil }).do("GET", "/api/v1/favorites", "", auth...)
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("GET without store: %d", rec.Code)
	}
}

func TestMetricsUseRouteTemplates(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.Engine().GET("/api/v1/things/:id", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	ts.do("GET", "/api/v1/things/42", "")
	ts.do("GET", "/api/v1/things/43", "")
	ts.do("GET", "/api/v1/random-404-path", "")
	ts.do("BREW", "/api/v1/health", "")
	rec := ts.do("GET", "/metrics", "")
	body := rec.Body.String()
	for _, want := range []string{
		`palaver_http_requests_total{code="204",method="GET",route="/api/v1/things/:id"} 2`,
		`palaver_http_requests_total{code="404",method="GET",route="unmatched"} 1`,
		`palaver_http_request_seconds_count{method="GET",route="/api/v1/things/:id"} 2`,
		`method="OTHER"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(body, "/api/v1/things/42") || strings.Contains(body, "random-404-path") {
		t.Error("metrics carry raw paths")
	}
	if !strings.Contains(ts.logs.String(), "route=/api/v1/things/:id") {
		t.Errorf("request not logged at debug:\n%s", ts.logs.String())
	}
}

func TestMetricsRouteAbsentWithoutSet(t *testing.T) {
	rec := newTestServer(t, func(c *rest.Config) { c.Metrics = nil }).do("GET", "/metrics", "")
	if rec.Code != http.StatusNotFound {
		t.Fatalf("status %d", rec.Code)
	}
}
