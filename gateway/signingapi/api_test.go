package signingapi

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// fixture is a machine, a store and the API behind a test server.
type fixture struct {
	t       *testing.T
	machine *fsm.Machine
	store   *eventstore.Store
	api     *API
	srv     *httptest.Server
	index   atomic.Uint64
	now     time.Time
	server  ed25519.PrivateKey
	retired []string
}

func (f *fixture) Propose(_ context.Context, cmd fsm.Command) (fsm.Result, error) {
	data, err := fsm.Encode(cmd, ulid.Make().String(), "n1", f.now.UnixMilli())
	if err != nil {
		return fsm.Result{}, err
	}
	res, ok := f.machine.Apply(f.index.Add(1), data).(fsm.Result)
	if !ok {
		return fsm.Result{}, fmt.Errorf("unexpected response")
	}
	return res, nil
}

func (f *fixture) RetireKey(ctx context.Context, did, kid string) (int, int, error) {
	f.retired = append(f.retired, did+"/"+kid)
	res, err := f.Propose(ctx, fsm.RetireKey{DID: did, KID: kid})
	if err != nil || res.Code != fsm.OK {
		return 0, 0, err
	}
	return 1, 1, nil
}

type tokens map[string]string

func (t tokens) ResolveToken(token string) (string, bool) { d, ok := t[token]; return d, ok }

func newFixture(t *testing.T) *fixture {
	t.Helper()
	_, server, _ := ed25519.GenerateKey(rand.Reader)
	f := &fixture{t: t, machine: fsm.New(nil), now: time.Now(), server: server}
	store, err := eventstore.Open(context.Background(), eventstore.Options{Path: t.TempDir() + "/events.db", NoSync: true,
		Scope: func(venue string) (inc string, public, ok bool) {
			f.machine.Read(func(st *fsm.State) { inc, public, ok = st.ChannelScope(venue) })
			return inc, public, ok
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	f.store = store
	f.api = New(Config{ServerName: "palaver.test", BaseURL: "http://palaver.test", ServerKey: server, State: f.machine,
		Proposer: f, Messages: store, Retirer: f, PeerKeyRetry: time.Minute, Now: func() time.Time { return f.now }})
	pub := server.Public().(ed25519.PublicKey)
	f.mustPropose(fsm.RegisterKey{DID: f.api.ServerDID(), KID: signing.KID(pub), PublicKey: pub, Source: "server-key"})
	s := rest.New(rest.Config{ServerName: "palaver.test", BaseURL: "http://palaver.test", Tokens: tokens{"tok-alice": "did:key:alice"}})
	f.api.Mount(s)
	f.srv = httptest.NewServer(s.Handler())
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) mustPropose(cmd fsm.Command) fsm.Result {
	f.t.Helper()
	res, err := f.Propose(context.Background(), cmd)
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

func (f *fixture) get(path, token string) (int, map[string]any) {
	f.t.Helper()
	return f.doT(f.t, "GET", path, token, "")
}

func (f *fixture) do(method, path, token, body string) (int, map[string]any) {
	f.t.Helper()
	return f.doT(f.t, method, path, token, body)
}

func (f *fixture) doT(t *testing.T, method, path, token, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	return resp.StatusCode, out
}

// channel creates a public channel with one member session of did.
func (f *fixture) channel(name, did string) {
	f.mustPropose(fsm.RegisterSession{ID: "s-" + did, Node: "n1", Nick: "nick" + fmt.Sprint(f.index.Load()), User: "u", Host: "h", DID: did})
	f.mustPropose(fsm.Join{Session: "s-" + did, Channel: name})
}

// store writes a message signed (or not) and returns it.
func (f *fixture) storeMsg(channel, did, text string, at time.Time, sign func(canonical []byte) string) eventstore.Message {
	f.t.Helper()
	id := ulid.MustNew(ulid.Timestamp(at), rand.Reader).String()
	m := &eventstore.Message{MsgID: id, Venue: channel, Command: "PRIVMSG", Sender: "n!u@h", SenderNick: "n", SenderDID: did,
		Text: text, Tags: map[string]string{}, Time: at}
	if sign != nil {
		venue, _ := signing.ChannelVenue(channel)
		canonical, err := signing.Message{Envelope: signing.Envelope{From: did, MsgID: id, Venue: venue}, Body: text}.Canonical()
		if err != nil {
			f.t.Fatal(err)
		}
		m.Tags["+freeq.at/sig"] = sign(canonical)
	}
	if err := f.store.Append(context.Background(), m); err != nil {
		f.t.Fatal(err)
	}
	return *m
}

func TestServerKeyAndDIDDocument(t *testing.T) {
	f := newFixture(t)
	pub := f.server.Public().(ed25519.PublicKey)
	code, body := f.get("/api/v1/signing-key", "")
	if code != 200 || body["kid"] != signing.KID(pub) || body["public_key"] != signing.EncodePublicKey(pub) ||
		body["did"] != "did:web:palaver.test" || body["expires_at"] != nil || body["registered_at"] == nil {
		t.Fatalf("signing-key = %d %v", code, body)
	}
	code, doc := f.get("/.well-known/did.json", "")
	vms, _ := doc["verificationMethod"].([]any)
	if code != 200 || doc["id"] != "did:web:palaver.test" || len(vms) != 1 {
		t.Fatalf("did.json = %d %v", code, doc)
	}
	mb := vms[0].(map[string]any)["publicKeyMultibase"].(string)
	if !strings.HasPrefix(mb, "z6Mk") {
		t.Fatalf("publicKeyMultibase %q is not an ed25519 multikey", mb)
	}
}

func TestKeyLifecycleRoutes(t *testing.T) {
	f := newFixture(t)
	did := "did:key:alice"
	k1, _, _ := ed25519.GenerateKey(rand.Reader)
	k2, _, _ := ed25519.GenerateKey(rand.Reader)
	k3, _, _ := ed25519.GenerateKey(rand.Reader)
	f.mustPropose(fsm.RegisterKey{DID: did, KID: signing.KID(k1), PublicKey: k1, Source: "local-session", ExpiresAt: f.now.Add(time.Hour).Unix()})
	f.now = f.now.Add(time.Second)
	f.mustPropose(fsm.RegisterKey{DID: did, KID: signing.KID(k2), PublicKey: k2, Source: "local-session", ExpiresAt: f.now.Add(2 * time.Hour).Unix()})
	f.now = f.now.Add(time.Second)
	f.mustPropose(fsm.RegisterKey{DID: did, KID: signing.KID(k3), PublicKey: k3, Source: "local-session", ExpiresAt: f.now.Add(3 * time.Hour).Unix()})

	// The owner retires k3 (newest): it stays listed with its date and is never the current key.
	code, body := f.do("POST", "/api/v1/devices/sign-out", "tok-alice", `{"kid":"`+signing.KID(k3)+`"}`)
	if code != 200 || body["ok"] != true || body["sessions_closed"] != float64(1) {
		t.Fatalf("sign-out = %d %v", code, body)
	}
	code, _ = f.do("POST", "/api/v1/devices/sign-out", "", `{"kid":"x"}`)
	if code != 401 {
		t.Fatalf("sign-out without bearer = %d", code)
	}
	code, _ = f.do("POST", "/api/v1/devices/sign-out", "tok-alice", `not json`)
	if code != 400 {
		t.Fatalf("sign-out with a bad body = %d", code)
	}

	// An hour and a half later k1 has expired: left out of the list, still served by kid.
	f.now = f.now.Add(90 * time.Minute)
	code, list := f.get("/api/v1/signing-keys/"+did, "")
	keys, _ := list["keys"].([]any)
	if code != 200 || len(keys) != 2 {
		t.Fatalf("keys of %s = %d %v", did, code, list)
	}
	if keys[0].(map[string]any)["kid"] != signing.KID(k3) || keys[0].(map[string]any)["removed_at"] == nil {
		t.Fatalf("newest first with the retired key dated: %v", keys)
	}
	if list["public_key"] != signing.EncodePublicKey(k2) {
		t.Fatalf("current key = %v, want k2 (k3 retired, k1 expired)", list["public_key"])
	}
	code, one := f.get("/api/v1/signing-keys/"+did+"/"+signing.KID(k1), "")
	if code != 200 || one["expires_at"] == nil || one["public_key"] != signing.EncodePublicKey(k1) {
		t.Fatalf("expired key by kid = %d %v", code, one)
	}
	if code, _ := f.get("/api/v1/signing-keys/"+did+"/nope", ""); code != 404 {
		t.Fatalf("unknown kid = %d", code)
	}
	code, empty := f.get("/api/v1/signing-keys/did:key:nobody", "")
	if code != 200 || empty["public_key"] != nil || len(empty["keys"].([]any)) != 0 {
		t.Fatalf("unknown DID = %d %v", code, empty)
	}
	if code, _ := f.get("/api/v1/signing-keys/not-a-did", ""); code != 400 {
		t.Fatalf("malformed DID = %d", code)
	}
}

func TestBatchKeyRoute(t *testing.T) {
	f := newFixture(t)
	k1, _, _ := ed25519.GenerateKey(rand.Reader)
	k2, _, _ := ed25519.GenerateKey(rand.Reader)
	f.mustPropose(fsm.RegisterKey{DID: "did:key:a", KID: signing.KID(k1), PublicKey: k1, Source: "local-session"})
	f.mustPropose(fsm.RegisterKey{DID: "did:key:b", KID: signing.KID(k2), PublicKey: k2, Source: "local-session"})
	many := make([]string, 51)
	for i := range many {
		many[i] = "did:key:a/" + signing.KID(k1) // duplicates count before they are dropped
	}
	cases := []struct {
		name  string
		query string
		code  int
		kids  []string
	}{
		{"none", "", 400, nil},
		{"only commas", ",, ,", 400, nil},
		{"pair without slash", "did:key:a", 400, nil},
		{"51 pairs", strings.Join(many, ","), 400, nil},
		{"50 duplicates", strings.Join(many[:50], ","), 200, []string{signing.KID(k1)}},
		{"request order, unheld omitted", "did:key:b/" + signing.KID(k2) + ", did:key:zz/none ,did:key:a/" + signing.KID(k1), 200,
			[]string{signing.KID(k2), signing.KID(k1)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := f.doT(t, "GET", "/api/v1/signing-keys?keys="+url.QueryEscape(tc.query), "", "")
			if code != tc.code {
				t.Fatalf("status %d, want %d: %v", code, tc.code, body)
			}
			if tc.code != 200 {
				if body["error"] != "Bad Request" {
					t.Fatalf("error object %v", body)
				}
				return
			}
			got := body["keys"].([]any)
			if len(got) != len(tc.kids) {
				t.Fatalf("keys %v, want kids %v", got, tc.kids)
			}
			for i, k := range got {
				if k.(map[string]any)["kid"] != tc.kids[i] {
					t.Fatalf("keys[%d] = %v, want %s", i, k, tc.kids[i])
				}
			}
		})
	}
}

func TestVerifyVerdicts(t *testing.T) {
	f := newFixture(t)
	did := "did:key:alice"
	f.channel("#v", did)
	_, session, _ := ed25519.GenerateKey(rand.Reader)
	spub := session.Public().(ed25519.PublicKey)
	f.mustPropose(fsm.RegisterKey{DID: did, KID: signing.KID(spub), PublicKey: spub, Source: "local-session"})

	authored := f.storeMsg("#v", did, "mine", f.now, func(c []byte) string { return signing.Sign(session, c) })
	relayed := f.storeMsg("#v", did, "relayed", f.now, func(c []byte) string { return signing.Sign(f.server, c) })
	unsigned := f.storeMsg("#v", "", "guest", f.now, nil)
	tampered := f.storeMsg("#v", did, "tampered", f.now, func(c []byte) string { return signing.Sign(session, append(c, ' ')) })

	// Retire the session key; a message made afterwards with it verifies invalid, key-retired.
	f.now = f.now.Add(2 * time.Second)
	f.mustPropose(fsm.RetireKey{DID: did, KID: signing.KID(spub)})
	late := f.storeMsg("#v", did, "too late", f.now.Add(2*time.Second), func(c []byte) string { return signing.Sign(session, c) })

	cases := []struct {
		name                        string
		msg                         eventstore.Message
		verdict, verifiedBy, proves string
		keySource                   any
	}{
		{"authorship", authored, "valid", "client-session-key", "authorship", "local-session"},
		{"relay", relayed, "valid", "server-key", "relay", "server-key"},
		{"unsigned", unsigned, "invalid", "unsigned", "nothing", nil},
		{"tampered", tampered, "invalid", "client-session-key", "nothing", "local-session"},
		{"retired before the message", late, "invalid", "key-retired", "nothing", "local-session"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := f.doT(t, "GET", "/api/v1/verify/"+tc.msg.MsgID, "", "")
			v, _ := body["verification"].(map[string]any)
			if code != 200 || body["verdict"] != tc.verdict || v["verified_by"] != tc.verifiedBy || v["proves"] != tc.proves ||
				body["key_source"] != tc.keySource || v["meaning"] == "" {
				t.Fatalf("verify = %d %v", code, body)
			}
		})
	}
	// An earlier message stays valid after the retirement.
	if _, body := f.get("/api/v1/verify/"+authored.MsgID, ""); body["verdict"] != "valid" {
		t.Fatalf("a message made before the retirement: %v", body)
	}
	if code, body := f.get("/api/v1/verify/"+ulid.Make().String(), ""); code != 404 || body["error"] != "Not Found" {
		t.Fatalf("unknown msgid = %d %v", code, body)
	}
	if code, _ := f.get("/api/v1/verify/not-a-ulid", ""); code != 404 {
		t.Fatalf("malformed msgid = %d", code)
	}
}

func TestEvidenceBundleRoundTrip(t *testing.T) {
	f := newFixture(t)
	did := "did:key:alice"
	_, session, _ := ed25519.GenerateKey(rand.Reader)
	spub := session.Public().(ed25519.PublicKey)
	f.mustPropose(fsm.RegisterKey{DID: did, KID: signing.KID(spub), PublicKey: spub, Source: "local-session"})
	msgs := []eventstore.Message{
		f.storeMsg("#e", did, "one", f.now, func(c []byte) string { return signing.Sign(session, c) }),
		f.storeMsg("#e", did, "two", f.now, func(c []byte) string { return signing.Sign(f.server, c) }),
		f.storeMsg("#e", "", "guest", f.now, nil),
	}
	data, err := f.api.BuildEvidence(context.Background(), "#e", msgs)
	if err != nil {
		t.Fatal(err)
	}
	report, err := signing.VerifyBundle(data)
	if err != nil {
		t.Fatalf("bundle does not verify: %v", err)
	}
	if valid, invalid, _, unsigned := report.Tally(); valid != 2 || invalid != 0 || unsigned != 1 {
		t.Fatalf("tally valid=%d invalid=%d unsigned=%d", valid, invalid, unsigned)
	}
	tampered := strings.Replace(string(data), `"text":"one"`, `"text":"uno"`, 1)
	if _, err := signing.VerifyBundle([]byte(tampered)); err == nil {
		t.Fatal("a bundle with tampered text verified")
	}
}

// TestVerifyAnswersFollowKeys checks that a cached verify answer is not served once the key it was
// built with has changed: a key registered after a first "unknown key" answer, and a retirement
// that the answer's signing_key must show.
func TestVerifyAnswersFollowKeys(t *testing.T) {
	f := newFixture(t)
	did := "did:key:bob"
	f.channel("#c", did)
	_, session, _ := ed25519.GenerateKey(rand.Reader)
	spub := session.Public().(ed25519.PublicKey)
	msg := f.storeMsg("#c", did, "signed before the key was known", f.now, func(c []byte) string { return signing.Sign(session, c) })
	path := "/api/v1/verify/" + msg.MsgID

	steps := []struct {
		name       string
		change     func()
		verifiedBy string
		removed    bool
	}{
		{"unknown key", func() {}, "unverifiable-unknown-key", false},
		{"unknown key, again", func() {}, "unverifiable-unknown-key", false},
		{"key registered", func() {
			f.mustPropose(fsm.RegisterKey{DID: did, KID: signing.KID(spub), PublicKey: spub, Source: "local-session"})
		}, "client-session-key", false},
		{"key registered, again", func() {}, "client-session-key", false},
		{"key retired after the message", func() {
			f.now = f.now.Add(2 * time.Second)
			f.mustPropose(fsm.RetireKey{DID: did, KID: signing.KID(spub)})
		}, "client-session-key", true},
	}
	for _, st := range steps {
		st.change()
		code, body := f.doT(t, "GET", path, "", "")
		v, _ := body["verification"].(map[string]any)
		if code != 200 || v["verified_by"] != st.verifiedBy {
			t.Fatalf("%s: verify = %d %v", st.name, code, body)
		}
		key, _ := body["signing_key"].(map[string]any)
		if removed := key["removed_at"] != nil; st.removed != removed || (st.verifiedBy == "client-session-key") != (key != nil) {
			t.Fatalf("%s: signing_key = %v, want removed_at shown: %v", st.name, key, st.removed)
		}
	}
}
