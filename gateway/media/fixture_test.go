package media

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/gateway/rest/contracttest"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Test identities: each token's DID.
const (
	didAlice = "did:key:alice"
	didBob   = "did:key:bob"
	didCarol = "did:key:carol"
)

type tokens map[string]string

func (t tokens) ResolveToken(token string) (string, bool) { d, ok := t[token]; return d, ok }

// fixture is a state machine, the media service on a REST server behind a real HTTP listener,
// with alice and bob logged in and #pub (public) and #priv (+i) founded by alice with bob in both.
type fixture struct {
	t        *testing.T
	machine  *fsm.Machine
	index    atomic.Uint64
	svc      *Service
	srv      *httptest.Server
	contract *contracttest.Contract
	registry *prometheus.Registry
	// level, when set, gates proposals as raft does: an entry above it is refused
	// (fsm.ErrClusterUpgrading); entries lists every entry proposed since.
	level   func() int
	mu      sync.Mutex
	entries [][]byte
}

func (f *fixture) Propose(_ context.Context, cmd fsm.Command) (fsm.Result, error) {
	data, err := fsm.Encode(cmd, ulid.Make().String(), "n1", time.Now().UnixMilli())
	if err != nil {
		return fsm.Result{}, err
	}
	if f.level != nil {
		if need, have := fsm.EntryLevel(data), f.level(); need > have {
			return fsm.Result{}, fmt.Errorf("entry of level %d, cluster at %d: %w", need, have, fsm.ErrClusterUpgrading)
		}
		f.mu.Lock()
		f.entries = append(f.entries, data)
		f.mu.Unlock()
	}
	res, ok := f.machine.Apply(f.index.Add(1), data).(fsm.Result)
	if !ok {
		return fsm.Result{}, fmt.Errorf("unexpected response")
	}
	return res, nil
}

func (f *fixture) mustOK(cmds ...fsm.Command) {
	f.t.Helper()
	for _, c := range cmds {
		if res, err := f.Propose(context.Background(), c); err != nil || (res.Code != fsm.OK && res.Code != fsm.NoChange) {
			f.t.Fatalf("%T: %v %v", c, res.Code, err)
		}
	}
}

func newFixture(t *testing.T, mutate func(*Config)) *fixture {
	t.Helper()
	return newFixtureLimited(t, rest.RateLimits{Off: true}, mutate)
}

// newFixtureLimited is newFixture with the REST server's rate limits.
func newFixtureLimited(t *testing.T, limits rest.RateLimits, mutate func(*Config)) *fixture {
	t.Helper()
	f := &fixture{t: t, machine: fsm.New(nil), registry: prometheus.NewRegistry()}
	reg := func(id, nick, did string) fsm.RegisterSession {
		return fsm.RegisterSession{ID: id, Node: "n1", Incarnation: "i1", Nick: nick, User: nick, Host: "h", DID: did}
	}
	f.mustOK(reg("s-alice", "alice", didAlice), reg("s-bob", "bob", didBob), reg("s-carol", "carol", didCarol),
		fsm.Join{Session: "s-alice", Channel: "#pub"}, fsm.Join{Session: "s-bob", Channel: "#pub"},
		fsm.Join{Session: "s-alice", Channel: "#priv"}, fsm.Join{Session: "s-bob", Channel: "#priv"},
		fsm.Mode{Session: "s-alice", Channel: "#priv", Changes: []fsm.ModeChange{{Add: true, Mode: "i"}}})
	r := rest.New(rest.Config{ServerName: "palaver.test", BaseURL: "http://palaver.test",
		Tokens: tokens{"tok-alice": didAlice, "tok-bob": didBob, "tok-carol": didCarol}, State: f.machine,
		RateLimits: limits})
	cfg := Config{Options: Options{Dir: t.TempDir(), AllowLoopbackFetch: true}, Node: "n1", BaseURL: "http://palaver.test",
		State: f.machine, Proposer: f, Registerer: f.registry}
	if mutate != nil {
		mutate(&cfg)
	}
	svc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.EnsureKey(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := svc.Mount(r); err != nil {
		t.Fatal(err)
	}
	if missing, err := r.UndocumentedRoutes(); err != nil || len(missing) > 0 {
		t.Fatalf("undocumented routes %v (%v)", missing, err)
	}
	f.svc = svc
	f.srv = httptest.NewServer(r.Handler())
	t.Cleanup(f.srv.Close)
	f.contract = contracttest.Fetch(t, f.srv.URL)
	return f
}

// do sends a request and returns the answer with its body, checked against the contract.
func (f *fixture) do(method, path, token string, body io.Reader, header http.Header) (*http.Response, []byte) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	f.contract.Check(f.t, method, f.srv.URL+path, resp, data)
	return resp, data
}

// jsonBody posts a JSON body.
func (f *fixture) postJSON(path, token string, v any) (*http.Response, map[string]any) {
	f.t.Helper()
	b, _ := json.Marshal(v)
	resp, data := f.do(http.MethodPost, path, token, bytes.NewReader(b), http.Header{"Content-Type": {"application/json"}})
	var out map[string]any
	json.Unmarshal(data, &out)
	return resp, out
}

// multipartBody builds an upload body: the file part (if name is not empty) and fields.
func multipartBody(t *testing.T, filename string, content []byte, fields map[string]string) (*bytes.Buffer, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	if filename != "" {
		w, err := mw.CreateFormFile("file", filename)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(content)
	}
	mw.Close()
	return &buf, mw.FormDataContentType()
}

// upload posts a file and decodes the answer.
func (f *fixture) upload(token, filename string, content []byte, fields map[string]string) (*http.Response, uploadResult) {
	f.t.Helper()
	body, ct := multipartBody(f.t, filename, content, fields)
	resp, data := f.do(http.MethodPost, "/api/v1/upload", token, body, http.Header{"Content-Type": {ct}})
	var out uploadResult
	json.Unmarshal(data, &out)
	return resp, out
}

func bufioReader(r io.Reader) *bufio.Reader { return bufio.NewReader(r) }
