package exchange

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/goccy/go-yaml"
	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/node/stream"
	"github.com/palaver-chat/palaver/testcluster/poll"
)

// testNode is one node: a store, an exchange, an HTTP server that can be taken down.
type testNode struct {
	did       string
	key       ed25519.PrivateKey
	store     *eventstore.Store
	x         *Exchange
	srv       *httptest.Server
	down      atomic.Bool
	hang      atomic.Bool // requests wait until their client gives up: a peer that stopped answering
	noStream  atomic.Bool // refuses streams' handshakes (other requests are served)
	pulls     pullLog     // the pulls this node answered
	mu        sync.Mutex
	delivered map[string]int
	stored    *stream.Stored            // what the exchange publishes; the test subscriber counts it
	deleted   func(eventstore.Deletion) // set by a test before traffic
	rec       *recorder                 // set by record
}

// fromStream is the test node's subscriber: it counts messages and hands deletions, reactions and
// relayed TAGMSGs to the test's hooks.
func (n *testNode) fromStream(it stream.Item) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch it.Kind {
	case stream.KindMessage:
		n.delivered[it.Message.MsgID]++
	case stream.KindDeletion:
		if n.deleted != nil {
			n.deleted(*it.Deletion)
		}
	case stream.KindReaction:
		if n.rec != nil {
			n.rec.reaction(*it.Reaction)
		}
	case stream.KindEphemeral:
		if n.rec != nil {
			n.rec.typing(*it.Message)
		}
	}
}

// sync waits until the test subscriber handled everything published so far.
func (n *testNode) sync() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.stored.Sync(ctx); err != nil {
		panic(err)
	}
}

type cluster struct {
	nodes map[string]*testNode
}

func (c *cluster) keys(did, kid string) (ed25519.PublicKey, bool) {
	n := c.nodes[did]
	if n == nil {
		return nil, false
	}
	pub := n.key.Public().(ed25519.PublicKey)
	return pub, signing.KID(pub) == kid
}

func newCluster(t *testing.T, names ...string) *cluster {
	gin.SetMode(gin.ReleaseMode)
	c := &cluster{nodes: map[string]*testNode{}}
	for _, name := range names {
		_, key, _ := ed25519.GenerateKey(rand.Reader)
		store, err := eventstore.Open(context.Background(), eventstore.Options{Path: t.TempDir() + "/e.db", NoSync: true,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		n := &testNode{did: "did:web:" + name, key: key, store: store, delivered: map[string]int{}}
		e := gin.New()
		n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.hang.Load() {
				<-r.Context().Done()
				return
			}
			if n.down.Load() || n.noStream.Load() && r.URL.Path == streamPath {
				http.Error(w, "down", http.StatusServiceUnavailable)
				return
			}
			if r.Method == http.MethodGet && r.URL.Path == "/internal/v1/events" {
				n.pulls.record(r)
			}
			e.ServeHTTP(w, r)
		}))
		t.Cleanup(n.srv.Close)
		c.nodes[n.did] = n
		n.stored = stream.NewStored(stream.StoredOptions{})
		t.Cleanup(n.stored.Close)
		if err := n.stored.Subscribe("test", stream.Backpressure, n.fromStream, stream.Cluster); err != nil {
			t.Fatal(err)
		}
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		n.x = New(Config{Self: n.did, Key: key, Store: store, Keys: c.keys, PullEvery: time.Hour, Client: testClient(), PageSize: 500, QueueSize: 4096,
			Accept:       chat.New(chat.Config{Store: store, Stored: n.stored, NodeName: name, Logger: quiet}),
			Authenticate: headerPeer, Stored: n.stored, Logger: quiet})
		n.x.Mount(e)
	}
	for _, n := range c.nodes {
		self := n
		self.x.cfg.Peers = func() []Peer {
			var out []Peer
			for _, o := range c.nodes {
				if o != self {
					out = append(out, Peer{DID: o.did, BaseURL: o.srv.URL})
				}
			}
			return out
		}
		t.Cleanup(self.x.Close)
	}
	return c
}

// headerPeer stands in for the cluster listener's TLS identity in these tests: the node named by
// the Test-Tls-Peer header ("none": no cluster node), or else the node the request's signature
// header claims (the handlers still verify the signature against it).
func headerPeer(r *http.Request) (string, error) {
	switch peer := r.Header.Get("Test-Tls-Peer"); peer {
	case "":
		return r.Header.Get("Palaver-Node"), nil
	case "none":
		return "", errors.New("no certificate of the cluster")
	default:
		return peer, nil
	}
}

// readFlag is a request body that records whether anything read it.
type readFlag struct{ read atomic.Bool }

func (r *readFlag) Read([]byte) (int, error) { r.read.Store(true); return 0, io.EOF }

// TestUnauthenticatedRequestsAreRefusedUnread: a request whose connection is not a cluster
// node's is refused before its body is read, and an exchange without Authenticate refuses all.
func TestUnauthenticatedRequestsAreRefusedUnread(t *testing.T) {
	c := newCluster(t, "a")
	a := c.nodes["did:web:a"]
	noAuth := New(Config{Self: "did:web:z", Store: a.store, Keys: c.keys, Logger: a.x.cfg.Logger,
		Client: testClient(), PullEvery: time.Second, PageSize: 500, QueueSize: 4096})
	defer noAuth.Close()
	for _, tc := range []struct {
		name string
		x    *Exchange
		peer string
	}{
		{"connection of no node", a.x, "none"},
		{"exchange without Authenticate", noAuth, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := gin.New()
			tc.x.Mount(e)
			for _, method := range []string{"POST", "GET"} {
				body := &readFlag{}
				req := httptest.NewRequest(method, "/internal/v1/events", body)
				req.Header.Set("Test-Tls-Peer", tc.peer)
				rec := httptest.NewRecorder()
				e.ServeHTTP(rec, req)
				if rec.Code != http.StatusForbidden || body.read.Load() {
					t.Fatalf("%s: status %d, body read %v", method, rec.Code, body.read.Load())
				}
			}
		})
	}
}

// say stores a message originated by n and publishes it.
func (n *testNode) say(t *testing.T, text string) string {
	t.Helper()
	m := &eventstore.Message{MsgID: ulid.Make().String(), Venue: "#x", Command: "PRIVMSG", Sender: "a!u@h",
		SenderNick: "a", Text: text, Time: time.Now(), Origin: Name(n.did)}
	if err := n.store.Append(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	n.x.Publish(*m)
	return m.MsgID
}

func (n *testNode) count(id string) int {
	n.sync()
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.delivered[id]
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, what, cond)
}

func TestPushPullExactlyOnce(t *testing.T) {
	c := newCluster(t, "a", "b")
	a, b := c.nodes["did:web:a"], c.nodes["did:web:b"]
	var early []string
	for i := 0; i < 3; i++ {
		early = append(early, a.say(t, fmt.Sprint("early ", i)))
	}
	waitFor(t, "the pushed events", func() bool { return b.count(early[2]) == 1 })

	// b goes down; a keeps talking; pushes fail.
	b.down.Store(true)
	var missed []string
	for i := 0; i < 700; i++ { // more than one pull page
		missed = append(missed, a.say(t, fmt.Sprint("missed ", i)))
	}
	b.down.Store(false)
	b.x.PullAll(context.Background())
	a.x.PullAll(context.Background()) // nothing to copy from b; must not duplicate either
	b.x.PullAll(context.Background())
	// The pull or, while it is open, the stream (the pull then carries no messages) delivers them.
	expectAllOnce(t, a, b, append(early, missed...))
	for _, id := range append(early, missed...) {
		if got := b.count(id); got != 1 {
			t.Fatalf("event %s delivered %d times on b, want exactly once", id, got)
		}
		if got := a.count(id); got != 0 {
			t.Fatalf("a delivered its own event %s back to itself", id)
		}
	}
	cursor, _ := ReadCursor(context.Background(), b.store, inCursor("a", LogMessages))
	if n, _ := a.store.Count(context.Background()); cursor != n {
		t.Fatalf("b's cursor for a = %d, want %d", cursor, n)
	}
}

func TestRequestsMustBeSignedByTheirOrigin(t *testing.T) {
	c := newCluster(t, "a", "b")
	a := c.nodes["did:web:a"]
	_, stranger, _ := ed25519.GenerateKey(rand.Reader)
	batch := []byte(`{"origin":"did:web:a","events":[{"origin_seq":1,"msgid":"01ARZ3NDEKTSV4RRFFQ69G5FAV","venue":"#x","command":"PRIVMSG","sender":"x!u@h","sender_nick":"x","text":"forged","time_ms":1700000000000}]}`)
	cases := []struct {
		name    string
		key     ed25519.PrivateKey
		did     string
		method  string
		body    []byte
		want    int
		tlsPeer string
	}{
		{"unsigned push", nil, "", "POST", batch, 401, ""},
		{"push signed by a stranger", stranger, "did:web:evil", "POST", batch, 401, ""},
		{"b pushing a's events", c.nodes["did:web:b"].key, "did:web:b", "POST", batch, 403, ""},
		{"pull by a stranger", stranger, "did:web:evil", "GET", nil, 401, ""},
		{"pull by b", c.nodes["did:web:b"].key, "did:web:b", "GET", nil, 200, ""},
		{"pull signed by b over another node's connection", c.nodes["did:web:b"].key, "did:web:b", "GET", nil, 403, "did:web:c"},
		{"a's push replayed over b's connection", a.key, "did:web:a", "POST", batch, 403, "did:web:b"},
		{"pull by b over no node's connection", c.nodes["did:web:b"].key, "did:web:b", "GET", nil, 403, "none"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := "/internal/v1/events"
			if tc.method == "GET" {
				path += "?after=0&limit=10"
			}
			req, _ := http.NewRequest(tc.method, a.srv.URL+path, bytes.NewReader(tc.body))
			if tc.key != nil {
				sign(req.Header, tc.key, tc.did, tc.method, path, tc.body, time.Now())
			}
			if tc.tlsPeer != "" {
				req.Header.Set("Test-Tls-Peer", tc.tlsPeer)
			}
			if got := statusOf(t, req); got != tc.want {
				t.Fatalf("status %d, want %d", got, tc.want)
			}
		})
	}
	if n, _ := a.store.Count(context.Background()); n != 0 {
		t.Fatalf("a stored %d forged events", n)
	}
}

func TestDeletionsTravelAndWaitForTheirMessage(t *testing.T) {
	c := newCluster(t, "a", "b", "c")
	a, b, cc := c.nodes["did:web:a"], c.nodes["did:web:b"], c.nodes["did:web:c"]
	var deleted atomic.Int32
	cc.mu.Lock()
	cc.deleted = func(eventstore.Deletion) { deleted.Add(1) }
	cc.mu.Unlock()
	ctx := context.Background()
	// a stores a message without pushing it; b copies it by pulling, c does not have it.
	m0 := &eventstore.Message{MsgID: ulid.Make().String(), Venue: "#x", Command: "PRIVMSG", Sender: "a!u@h",
		SenderNick: "a", Text: "to be deleted", Time: time.Now(), Origin: "a"}
	if err := a.store.Append(ctx, m0); err != nil {
		t.Fatal(err)
	}
	id := m0.MsgID
	if err := b.x.pull(ctx, Peer{DID: a.did, BaseURL: a.srv.URL}, allLogs); err != nil || b.count(id) != 1 {
		t.Fatalf("b's pull: %v (delivered %d)", err, b.count(id))
	}
	if err := b.store.DeleteAt(ctx, id, time.Now(), "b", eventstore.Deleter{Sender: "b!u@h", Tags: map[string]string{"+draft/delete": id}}); err != nil {
		t.Fatal(err)
	}
	// c asks b first: the delete names a message c does not have yet, so it waits.
	if err := cc.x.pull(ctx, Peer{DID: b.did, BaseURL: b.srv.URL}, allLogs); err != nil {
		t.Fatal(err)
	}
	cc.sync()
	if n, _ := ReadCursor(ctx, cc.store, inCursor("b", LogDeletes)); n != 0 || deleted.Load() != 0 {
		t.Fatalf("delete applied or skipped before its message arrived (cursor %d)", n)
	}
	if err := cc.x.pull(ctx, Peer{DID: a.did, BaseURL: a.srv.URL}, allLogs); err != nil {
		t.Fatal(err)
	}
	if err := cc.x.pull(ctx, Peer{DID: b.did, BaseURL: b.srv.URL}, allLogs); err != nil {
		t.Fatal(err)
	}
	m, err := cc.store.Get(ctx, id)
	cc.sync()
	if err != nil || m.DeletedAt.IsZero() || deleted.Load() != 1 {
		t.Fatalf("on c: deleted=%v delivered=%d err=%v", !m.DeletedAt.IsZero(), deleted.Load(), err)
	}
	// a hears of it too, and a second round changes nothing.
	a.x.PullAll(ctx)
	a.x.PullAll(ctx)
	if m, _ := a.store.Get(ctx, id); m.DeletedAt.IsZero() {
		t.Fatal("a did not apply b's delete")
	}
}

// TestContractFragmentDescribesTheMountedRoutes: the cluster plane's OpenAPI fragment documents
// exactly the routes Mount registers.
func TestContractFragmentDescribesTheMountedRoutes(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(ContractFragment, &doc); err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	e := gin.New()
	New(Config{Client: testClient(), PullEvery: time.Second, PageSize: 500, QueueSize: 4096}).Mount(e)
	mounted := map[string]bool{}
	for _, r := range e.Routes() {
		mounted[r.Method+" "+r.Path] = true
	}
	if !maps.Equal(documented, mounted) {
		t.Fatalf("documented %v, mounted %v", documented, mounted)
	}
}

// testClient is the HTTP client of the exchanges tests build (the node gives its cluster client).
func testClient() *http.Client { return &http.Client{Timeout: 10 * time.Second} }

// TestPushCarriesEphemeralItemsOnly: POST /internal/v1/events delivers typing TAGMSGs and status
// messages; a push that holds a message, a delete or a reaction is refused whole and stores
// nothing (those travel on the stream and the pull). A push in v0.1.0's form, with its empty
// "events", is taken.
func TestPushCarriesEphemeralItemsOnly(t *testing.T) {
	c := newCluster(t, "a", "b")
	a, b := c.nodes["did:web:a"], c.nodes["did:web:b"]
	seen := a.record()
	typing := `{"msgid":"01ARZ3NDEKTSV4RRFFQ69G5FAT","venue":"#x","command":"TAGMSG","sender":"b!u@h","sender_nick":"b","text":"","tags":{"+typing":"active"},"time_ms":1700000000000}`
	message := `{"origin_seq":1,"msgid":"01ARZ3NDEKTSV4RRFFQ69G5FAV","venue":"#x","command":"PRIVMSG","sender":"b!u@h","sender_nick":"b","text":"pushed","time_ms":1700000000000}`
	for _, tc := range []struct {
		name string
		body string
		want int
	}{
		{"a message", `{"origin":"did:web:b","events":[` + message + `]}`, http.StatusBadRequest},
		{"a message beside a TAGMSG", `{"origin":"did:web:b","events":[` + message + `],"ephemeral":[` + typing + `]}`, http.StatusBadRequest},
		{"a delete", `{"origin":"did:web:b","deletions":[{"origin_seq":1,"root_msgid":"01ARZ3NDEKTSV4RRFFQ69G5FAV","at_ms":1700000000000,"venue":"#x","sender":"b!u@h"}]}`, http.StatusBadRequest},
		{"a reaction", `{"origin":"did:web:b","reactions":[{"origin_seq":1,"event_msgid":"01ARZ3NDEKTSV4RRFFQ69G5FAW","root_msgid":"01ARZ3NDEKTSV4RRFFQ69G5FAV","reactor":"did:plc:b","reactor_nick":"b","emoji":"👍","at_ms":1700000000000,"venue":"#x","sender":"b!u@h"}]}`, http.StatusBadRequest},
		{"a TAGMSG in v0.1.0's form", `{"origin":"did:web:b","events":[],"ephemeral":[` + typing + `]}`, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const path = "/internal/v1/events"
			req, _ := http.NewRequest(http.MethodPost, a.srv.URL+path, strings.NewReader(tc.body))
			sign(req.Header, b.key, b.did, http.MethodPost, path, []byte(tc.body), time.Now())
			if got := statusOf(t, req); got != tc.want {
				t.Fatalf("status %d, want %d", got, tc.want)
			}
		})
	}
	a.sync()
	if n, _ := a.store.Count(context.Background()); n != 0 || len(seen.reactionsSeen()) != 0 {
		t.Fatalf("a stored %d pushed messages and delivered reactions %v", n, seen.reactionsSeen())
	}
	if got := seen.ephemeralSeen(); !slices.Equal(got, []string{"01ARZ3NDEKTSV4RRFFQ69G5FAT"}) {
		t.Fatalf("delivered ephemeral %v, want the one TAGMSG of the accepted push", got)
	}
}

// statusOf sends req and returns the status it was answered with.
func statusOf(t *testing.T, req *http.Request) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
