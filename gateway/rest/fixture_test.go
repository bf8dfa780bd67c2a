package rest_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// The fixture is a REST server over a real event store (fsync off) and a
// hand-built replicated state, for exact control of channels, sessions and
// message times. Black-box tests against a whole node are in node_test.go.

// didOf is a did:key made from a fixed seed byte.
func didOf(seed byte) string {
	priv := ed25519.NewKeyFromSeed(append(make([]byte, 31), seed))
	return ircclient.DIDKeyEd25519(priv.Public().(ed25519.PublicKey))
}

var (
	aliceDID   = didOf(1) // member of every channel
	malloryDID = didOf(2) // member of the public channels only
	founderDID = didOf(3) // founder of #secret, not connected
	opDID      = didOf(4) // DID op of #secret, not connected
	carolDID   = didOf(5) // owns the nick carol, offline
	strangeDID = didOf(6) // resolvable, unknown here
)

// fixtureTokens are the bearer tokens the fixture accepts.
var fixtureTokens = fakeTokens{
	"alice-token": aliceDID, "mallory-token": malloryDID, "founder-token": founderDID, "op-token": opDID,
}

// baseTime is the fixture's clock origin; messages are placed relative to it.
var baseTime = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeState is a StateReader over a hand-built state.
type fakeState struct {
	mu sync.RWMutex
	fx *fsm.Fixture
}

func (f *fakeState) Read(fn func(*fsm.State)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fn(f.fx.State())
}

func (f *fakeState) update(fn func(*fsm.Fixture)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f.fx)
}

// fakeResolver knows the documents it was given.
type fakeResolver map[string]*keyresolver.Document

func (r fakeResolver) Resolve(_ context.Context, did string) (*keyresolver.Document, error) {
	if doc, ok := r[did]; ok {
		return doc, nil
	}
	return nil, keyresolver.ErrNotFound
}

func documentOf(t testing.TB, did, handle, pds string) *keyresolver.Document {
	t.Helper()
	doc, err := keyresolver.DIDKeyDocument(did)
	if err != nil {
		t.Fatal(err)
	}
	if handle != "" {
		doc.AlsoKnownAs = []string{"at://" + handle}
	}
	if pds != "" {
		doc.Service = []keyresolver.Service{{ID: "#atproto_pds", Type: "AtprotoPersonalDataServer", ServiceEndpoint: pds}}
	}
	return doc
}

type fixture struct {
	t        testing.TB
	srv      *rest.Server
	state    *fakeState
	store    *eventstore.Store
	contract *contract
}

// newFixture builds the state below and an empty store; adjust may change
// the server's config.
//
//	#pub       +nt, topic "Welcome", members alice, bob (guest), mallory
//	#secret    +int, member alice, founder founderDID, DID op opDID
//	#keyed     +ntk, member alice
//	#enc       +ntE, member alice
//	#topiconly public, no members, a topic
//	#empty     public, no members, no topic (kept by its founder)
func newFixture(t testing.TB, adjust func(*rest.Config)) *fixture {
	t.Helper()
	store, err := eventstore.Open(context.Background(), eventstore.Options{
		Path: filepath.Join(t.TempDir(), "events.db"), NoSync: true, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	f := &fixture{t: t, store: store, state: &fakeState{fx: fixtureState()}, contract: loadContract(t)}
	cfg := rest.Config{
		ServerName: "palaver.example.test", BaseURL: testBaseURL, Tokens: fixtureTokens,
		State: f.state, Events: store, Evidence: fakeEvidence{},
		Resolver: fakeResolver{
			aliceDID:   documentOf(t, aliceDID, "alice.example.com", "https://pds.example.com"),
			strangeDID: documentOf(t, strangeDID, "", ""),
		},
		Logger: slog.New(slog.DiscardHandler),
	}
	if adjust != nil {
		adjust(&cfg)
	}
	f.srv = rest.New(cfg)
	return f
}

func fixtureState() *fsm.Fixture {
	fx := fsm.NewFixture()
	at := baseTime.UnixMilli()
	session := func(id, nick, did string) *fsm.Session {
		if did != "" {
			fx.SetNickOwner(fsm.Fold(nick), did)
		}
		return fx.AddSession(fsm.Session{ID: id, Node: "n1", Nick: nick, User: "~" + strings.ToLower(nick), Host: "palaver/" + id,
			Realname: nick + " Example", DID: did, ConnectedAt: at})
	}
	session("s-alice", "Alice", aliceDID)
	session("s-bob", "bob", "").Away = "lunch"
	session("s-mallory", "mallory", malloryDID)
	fx.SetNickOwner("carol", carolDID)

	channel := func(name string, members ...string) *fsm.Channel {
		ch := fx.AddChannel(fsm.Channel{Name: name, CreatedAt: at, NoExternal: true, TopicLock: true})
		for _, m := range members {
			fx.AddMember(name, m, fsm.Member{JoinedAt: at, Op: name == "#pub" && m == "s-alice"})
		}
		return ch
	}
	pub := channel("#pub", "s-alice", "s-bob", "s-mallory")
	pub.Topic, pub.TopicBy, pub.TopicAt = "Welcome", "Alice", at+1500
	secret := channel("#secret", "s-alice")
	secret.InviteOnly, secret.FounderDID = true, founderDID
	fx.AddDIDOp("#secret", opDID)
	channel("#keyed", "s-alice").Key = "hunter2"
	channel("#enc", "s-alice").Encrypted = true
	topicOnly := channel("#topiconly")
	topicOnly.NoExternal, topicOnly.TopicLock, topicOnly.Topic = false, false, "Nobody here"
	channel("#empty").FounderDID = carolDID
	return fx
}

// post stores a message at a time and returns its msgid.
func (f *fixture) post(venue, nick, did, text string, at time.Time, tags map[string]string) string {
	f.t.Helper()
	id := ulid.MustNew(ulid.Timestamp(at), ulid.DefaultEntropy()).String()
	m := &eventstore.Message{
		MsgID: id, Venue: venue, Command: "PRIVMSG", Sender: nick + "!~" + strings.ToLower(nick) + "@palaver/x",
		SenderNick: nick, SenderDID: did, Text: text, Tags: tags, Time: at, Origin: "n1",
	}
	if err := f.store.Append(context.Background(), m); err != nil {
		f.t.Fatal(err)
	}
	return id
}

// edit stores a revision of root and returns its msgid.
func (f *fixture) edit(venue, nick, did, root, text string, at time.Time) string {
	f.t.Helper()
	id := ulid.MustNew(ulid.Timestamp(at), ulid.DefaultEntropy()).String()
	m := &eventstore.Message{
		MsgID: id, Venue: venue, Command: "PRIVMSG", Sender: nick + "!~" + strings.ToLower(nick) + "@palaver/x",
		SenderNick: nick, SenderDID: did, Text: text, Tags: map[string]string{"+draft/edit": root}, Time: at,
		Origin: "n1", ReplacesMsgID: root,
	}
	if err := f.store.Append(context.Background(), m); err != nil {
		f.t.Fatal(err)
	}
	return id
}

func (f *fixture) remove(msgid string) {
	f.t.Helper()
	if err := f.store.Delete(context.Background(), msgid, baseTime.Add(time.Hour)); err != nil {
		f.t.Fatal(err)
	}
}

// get sends a GET (with a bearer token unless token is "") through the
// handler, checks the response against the contract and returns it.
func (f *fixture) get(target, token string, header ...string) (*http.Response, []byte) {
	f.t.Helper()
	req := httptest.NewRequest("GET", target, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	f.srv.Handler().ServeHTTP(rec, req)
	resp := rec.Result()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable {
		f.t.Fatalf("GET %s: %d %s", target, resp.StatusCode, body)
	}
	f.contract.check(f.t, req, resp, body)
	return resp, body
}

// getJSON GETs and decodes a 200 answer into v.
func (f *fixture) getJSON(target, token string, v any) {
	f.t.Helper()
	resp, body := f.get(target, token)
	if resp.StatusCode != http.StatusOK {
		f.t.Fatalf("GET %s: %d %s", target, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		f.t.Fatalf("GET %s: %v in %s", target, err, body)
	}
}

// status GETs and returns the status, having checked the body.
func (f *fixture) status(target, token string) int {
	f.t.Helper()
	resp, _ := f.get(target, token)
	return resp.StatusCode
}

func msgids(msgs []rest.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.MsgID
	}
	return out
}

func texts(msgs []rest.Message) string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Text
	}
	return strings.Join(out, "|")
}
