package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/gateway/discovery"
	"github.com/palaver-chat/palaver/gateway/mcp"
	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/gateway/rest/contracttest"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/raft/fsm"
)

const (
	aliceDID   = "did:key:z6MkAlice"   // member of #pub and #secret
	malloryDID = "did:key:z6MkMallory" // member of #pub only
)

type tokens map[string]string

func (t tokens) ResolveToken(token string) (string, bool) { did, ok := t[token]; return did, ok }

type state struct{ st *fsm.State }

func (s state) Read(fn func(*fsm.State)) { fn(s.st) }

// endpoint is a REST server with the MCP endpoint and the discovery
// documents, served on a loopback socket, over a hand-built state (#pub
// public, #secret invite-only) and a real event store.
type endpoint struct {
	url      string
	contract *contracttest.Contract
	msgIDs   map[string][]string // venue → msgids, oldest first
}

func newEndpoint(t *testing.T, cfg mcp.Config) *endpoint {
	t.Helper()
	fx := fsm.NewFixture()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	pub := fx.AddChannel(fsm.Channel{Name: "#pub", CreatedAt: at.UnixMilli(), Topic: "hello"})
	fx.AddChannel(fsm.Channel{Name: "#secret", CreatedAt: at.UnixMilli(), InviteOnly: true})
	for id, s := range map[string]struct {
		nick, did string
		chans     []string
	}{"s-alice": {"alice", aliceDID, []string{"#pub", "#secret"}}, "s-mallory": {"mallory", malloryDID, []string{"#pub"}}} {
		fx.AddSession(fsm.Session{ID: id, Node: "n1", Nick: s.nick, User: "~" + s.nick, Host: "h", DID: s.did, ConnectedAt: at.UnixMilli()})
		for _, c := range s.chans {
			fx.AddMember(c, id, fsm.Member{})
		}
	}
	st := fx.State()

	store, err := eventstore.Open(context.Background(), eventstore.Options{Path: filepath.Join(t.TempDir(), "events.db"), NoSync: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	e := &endpoint{msgIDs: map[string][]string{}}
	for i, m := range []struct{ venue, text string }{{"#pub", "apples and pears"}, {"#pub", "more apples"}, {"#secret", "the secret plan"}, {"#pub", "bananas"}} {
		when := at.Add(time.Duration(i) * time.Second)
		id := ulid.MustNew(ulid.Timestamp(when), ulid.DefaultEntropy()).String()
		if err := store.Append(context.Background(), &eventstore.Message{MsgID: id, Venue: m.venue, Command: "PRIVMSG",
			Sender: "alice!~alice@h", SenderNick: "alice", SenderDID: aliceDID, Text: m.text, Time: when, Origin: "n1"}); err != nil {
			t.Fatal(err)
		}
		e.msgIDs[m.venue] = append(e.msgIDs[m.venue], id)
	}
	pub.Pins = []fsm.PinEntry{{MsgID: e.msgIDs["#pub"][0], PinnedBy: "alice", PinnedAt: at.UnixMilli()}}

	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	r := rest.New(rest.Config{ServerName: "mcp.test", BaseURL: base, Tokens: tokens{"alice-token": aliceDID, "mallory-token": malloryDID},
		State: state{st}, Events: store, AllowedOrigins: []string{"https://app.example"}})
	cfg.ServerName, cfg.Version, cfg.BaseURL = "mcp.test", "0.1.0", base
	if err := mcp.New(cfg).Mount(r); err != nil {
		t.Fatal(err)
	}
	d, err := discovery.New(discovery.Config{ServerName: "mcp.test", BaseURL: base, Version: "0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Mount(r); err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = r.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	e.url = srv.URL + "/mcp"
	e.contract = contracttest.Fetch(t, srv.URL)
	return e
}

// base is the server's base URL (its origin); port its port.
func (e *endpoint) base() string { return strings.TrimSuffix(e.url, "/mcp") }

func (e *endpoint) port() string {
	return e.url[strings.LastIndex(e.url, ":")+1 : len(e.url)-len("/mcp")]
}

// post sends a body to /mcp with optional header pairs.
func (e *endpoint) post(t *testing.T, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	return e.do(t, http.MethodPost, body, header...)
}

func (e *endpoint) do(t *testing.T, method, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, e.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	e.contract.Check(t, method, e.url, resp, data)
	return resp, data
}

// rpcResponse is a decoded JSON-RPC answer.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// call posts one request and decodes its single answer.
func (e *endpoint) call(t *testing.T, method, params string, header ...string) rpcResponse {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `"`
	if params != "" {
		body += `,"params":` + params
	}
	resp, data := e.post(t, body+"}", header...)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d %s", method, resp.StatusCode, data)
	}
	var r rpcResponse
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%s: %v: %s", method, err, data)
	}
	return r
}

// toolResult is a decoded tools/call result.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent map[string]any `json:"structuredContent"`
	IsError           bool           `json:"isError"`
}

func (e *endpoint) tool(t *testing.T, name, args string, header ...string) toolResult {
	t.Helper()
	r := e.call(t, "tools/call", `{"name":"`+name+`","arguments":`+args+`}`, header...)
	if r.Error != nil {
		t.Fatalf("%s: error %d %s", name, r.Error.Code, r.Error.Message)
	}
	var res toolResult
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || res.Content[0].Type != "text" || res.Content[0].Text == "" {
		t.Fatalf("%s: content %+v", name, res.Content)
	}
	if !res.IsError {
		// The text is the structured content, pretty-printed.
		var fromText map[string]any
		if err := json.Unmarshal([]byte(res.Content[0].Text), &fromText); err != nil || !jsonEqual(fromText, res.StructuredContent) {
			t.Fatalf("%s: text and structuredContent differ: %v", name, err)
		}
	}
	return res
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
