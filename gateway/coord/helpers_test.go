package coord_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/gateway/coord"
	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/gateway/rest/contracttest"
	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/raft/fsm"
	fsmcoord "github.com/palaver-chat/palaver/raft/fsm/coord"
)

// direct applies proposals straight to a machine, as a one-node log would.
type direct struct {
	mu  sync.Mutex
	m   *fsm.Machine
	idx uint64
	now time.Time
}

func (d *direct) Propose(_ context.Context, cmd fsm.Command) (fsm.Result, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.idx++
	data, err := fsm.Encode(cmd, fmt.Sprintf("r%d", d.idx), "n1", d.now.UnixMilli())
	if err != nil {
		return fsm.Result{}, err
	}
	return d.m.Apply(d.idx, data).(fsm.Result), nil
}

type tokens map[string]string

func (t tokens) ResolveToken(token string) (string, bool) { did, ok := t[token]; return did, ok }

// identity is a did:key user with its key.
type identity struct {
	did  string
	priv ed25519.PrivateKey
}

func newIdentity(t *testing.T, seed byte) identity {
	t.Helper()
	priv := ed25519.NewKeyFromSeed(bytesOf(seed, ed25519.SeedSize))
	mb, err := keyresolver.EncodeMultikey(keyresolver.PublicKey{Type: keyresolver.Ed25519, Raw: priv.Public().(ed25519.PublicKey)})
	if err != nil {
		t.Fatal(err)
	}
	return identity{did: "did:key:" + mb, priv: priv}
}

func bytesOf(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

// fixture is a coordination service over a real state machine, mounted on a REST server on a
// loopback socket. alice founds #pub (public) and #secret (+i); bob is in #pub only; carol is in
// no channel.
type fixture struct {
	svc               *coord.Service
	prop              *direct
	url               string
	contract          *contracttest.Contract
	alice, bob, carol identity
	serverKey         ed25519.PrivateKey
	now               time.Time
}

const serverDID = "did:web:coord.test"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	f := &fixture{alice: newIdentity(t, 1), bob: newIdentity(t, 2), carol: newIdentity(t, 3), now: now,
		serverKey: ed25519.NewKeyFromSeed(bytesOf(9, 32))}
	m := fsm.New(nil)
	f.prop = &direct{m: m, now: now}
	for _, c := range []fsm.Command{
		fsm.RegisterSession{ID: "s-alice", Node: "n1", Nick: "alice", User: "a", Host: "h", DID: f.alice.did},
		fsm.RegisterSession{ID: "s-bob", Node: "n1", Nick: "bob", User: "b", Host: "h", DID: f.bob.did},
		fsm.RegisterSession{ID: "s-carol", Node: "n1", Nick: "carol", User: "c", Host: "h", DID: f.carol.did},
		fsm.Join{Session: "s-alice", Channel: "#pub"}, fsm.Join{Session: "s-bob", Channel: "#pub"},
		fsm.Join{Session: "s-alice", Channel: "#secret"},
		fsm.Mode{Session: "s-alice", Channel: "#secret", Changes: []fsm.ModeChange{{Add: true, Mode: "i"}}},
	} {
		if res, _ := f.prop.Propose(context.Background(), c); res.Code != fsm.OK {
			t.Fatalf("setup %T: %v", c, res.Code)
		}
	}
	f.svc = coord.New(coord.Config{Options: coord.Defaults(), State: m, Proposer: f.prop, ServerDID: serverDID,
		ServerKey: f.serverKey, NewID: func() string { return ulid.Make().String() }, Now: func() time.Time { return now }})
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	r := rest.New(rest.Config{ServerName: "coord.test", BaseURL: base, State: m,
		Tokens: tokens{"alice": f.alice.did, "bob": f.bob.did, "carol": f.carol.did}, RateLimits: rest.RateLimits{Off: true}})
	if err := f.svc.Mount(r); err != nil {
		t.Fatal(err)
	}
	if undocumented, err := r.UndocumentedRoutes(); err != nil || len(undocumented) > 0 {
		t.Fatalf("undocumented routes %v, %v", undocumented, err)
	}
	srv.Config.Handler = r.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	f.url = srv.URL
	f.contract = contracttest.Fetch(t, srv.URL)
	return f
}

// eventID mints an event id at the fixture's time.
func (f *fixture) eventID() string {
	return ulid.MustNew(ulid.Timestamp(f.now), ulid.DefaultEntropy()).String()
}

// actTags builds a signed act TAGMSG's tags: kind, verb, act-id (when set) and more act-* pairs.
func (f *fixture) actTags(t *testing.T, who identity, venue, kind, verb, actID string, kv ...string) map[string]string {
	t.Helper()
	tags := map[string]string{"+freeq.at/act": kind, "+freeq.at/act-verb": verb, "+freeq.at/from": who.did,
		"+freeq.at/eventid": f.eventID()}
	if actID != "" {
		tags["+freeq.at/act-id"] = actID
	}
	for i := 0; i+1 < len(kv); i += 2 {
		tags["+freeq.at/"+kv[i]] = kv[i+1]
	}
	return sign(t, who, venue, tags)
}

func sign(t *testing.T, who identity, venue string, tags map[string]string) map[string]string {
	t.Helper()
	v, err := signing.ParseVenue(venue)
	if err != nil {
		t.Fatal(err)
	}
	canonical, err := signing.Act{ID: tags["+freeq.at/eventid"], Venue: v, Tags: tags}.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	tags["+freeq.at/sig"] = signing.Sign(who.priv, canonical)
	return tags
}

// get fetches path with an optional bearer, checks the response against the contract and
// decodes a JSON body into out (when not nil).
func (f *fixture) get(t *testing.T, path, bearer string, out any) int {
	t.Helper()
	return f.do(t, http.MethodGet, path, bearer, "", out)
}

func (f *fixture) do(t *testing.T, method, path, bearer, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, f.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
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
	f.contract.Check(t, method, f.url+path, resp, data)
	if resp.StatusCode >= 400 {
		var e rest.ErrorObject
		if json.Unmarshal(data, &e) != nil || e.Status != resp.StatusCode || e.Error == "" {
			t.Errorf("%s %s: %d without the Error object: %s", method, path, resp.StatusCode, data)
		}
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
	return resp.StatusCode
}

// coordState is the digest of the coordination state, to show that a refused input changed
// nothing.
func (f *fixture) coordState(t *testing.T) [32]byte {
	t.Helper()
	var out [32]byte
	f.prop.m.Read(func(st *fsm.State) { out = fsmcoord.Of(st).Digest() })
	return out
}
