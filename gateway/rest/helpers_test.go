package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/palaver-chat/palaver/gateway/metrics"
	"github.com/palaver-chat/palaver/gateway/rest"
)

const testBaseURL = "http://palaver.example.test:8080"

type fakeTokens map[string]string

func (f fakeTokens) ResolveToken(token string) (string, bool) {
	did, ok := f[token]
	return did, ok
}

type fakeHealth struct{ h rest.Health }

func (f fakeHealth) Health() rest.Health { return f.h }

// fakeFavorites stores lists in memory; failWith makes SetFavorites fail.
type fakeFavorites struct {
	mu       sync.Mutex
	lists    map[string][]string
	failWith error
}

func (f *fakeFavorites) Favorites(did string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.lists[did])
}

func (f *fakeFavorites) SetFavorites(_ context.Context, did string, list []string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failWith != nil {
		return nil, f.failWith
	}
	if f.lists == nil {
		f.lists = make(map[string][]string)
	}
	f.lists[did] = slices.Clone(list)
	return slices.Clone(list), nil
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type testServer struct {
	*rest.Server
	favorites *fakeFavorites
	metrics   *metrics.Set
	logs      *syncBuffer
}

// newTestServer builds a server with fakes; adjust may change the config.
func newTestServer(t *testing.T, adjust func(*rest.Config)) *testServer {
	t.Helper()
	ts := &testServer{favorites: &fakeFavorites{}, metrics: metrics.New(), logs: &syncBuffer{}}
	cfg := rest.Config{
		ServerName:     "palaver.example.test",
		BaseURL:        testBaseURL + "/",
		AllowedOrigins: []string{"https://auth.example.test", "https://EXAMPLE.test:443"},
		Tokens:         fakeTokens{"good-token": "did:key:z6MkAlice"},
		Health:         fakeHealth{rest.Health{ServerName: "palaver.example.test", Connections: 3, Channels: 2, UptimeSecs: 99, Version: "0.1.0", Node: "n1", Role: "leader", Term: 4}},
		Favorites:      ts.favorites,
		Metrics:        ts.metrics,
		Logger:         slog.New(slog.NewTextHandler(ts.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if adjust != nil {
		adjust(&cfg)
	}
	ts.Server = rest.New(cfg)
	return ts
}

// do sends one request through the handler and returns the recorded response.
func (ts *testServer) do(method, target string, body string, header ...string) *httptest.ResponseRecorder {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	ts.Handler().ServeHTTP(rec, req)
	return rec
}

func decodeError(t *testing.T, rec *httptest.ResponseRecorder) rest.ErrorObject {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("error Content-Type %q, body %q", ct, rec.Body.String())
	}
	var e rest.ErrorObject
	dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("error body %q: %v", rec.Body.String(), err)
	}
	if e.Status != rec.Code || e.Error != http.StatusText(rec.Code) {
		t.Fatalf("error object %+v for status %d", e, rec.Code)
	}
	if e.Documentation != testBaseURL+"/api/v1/openapi.json" {
		t.Fatalf("documentation = %q", e.Documentation)
	}
	if e.Message == "" {
		t.Fatal("empty message")
	}
	return e
}

var errStoreDown = errors.New("raft: not the leader")
