package rest_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/node/eventstore"
)

func TestMessageLookup(t *testing.T) {
	f := newFixture(t, nil)
	root := f.post("#pub", "Alice", aliceDID, "original", baseTime, map[string]string{"+freeq.at/sig": "ed25519:k:s"})
	rev := f.edit("#pub", "Alice", aliceDID, root, "revised", baseTime.Add(time.Second))
	guestMsg := f.post("#pub", "bob", "", "guest", baseTime.Add(2*time.Second), nil)
	gone := f.post("#pub", "bob", "", "gone", baseTime.Add(3*time.Second), nil)
	f.remove(gone)
	secret := f.post("#secret", "Alice", aliceDID, "secret", baseTime, nil)
	dm := ulid.MustNew(ulid.Timestamp(baseTime), ulid.DefaultEntropy()).String()
	if err := f.store.Append(context.Background(), &eventstore.Message{MsgID: dm, Venue: "dm:" + aliceDID + "," + malloryDID,
		Command: "PRIVMSG", Sender: "Alice!~alice@x", SenderNick: "Alice", SenderDID: aliceDID, Text: "psst", Time: baseTime}); err != nil {
		t.Fatal(err)
	}

	var got rest.StoredMessage
	f.getJSON("/api/v1/messages/"+root, "", &got)
	if got.Channel != "#pub" || got.MsgID != root || got.Text != "original" || got.SenderDID == nil || *got.SenderDID != aliceDID ||
		got.ReplacesMsgID != nil || got.Timestamp != baseTime.Unix() || got.Tags["+freeq.at/sig"] != "ed25519:k:s" || got.Tags["msgid"] != root {
		t.Errorf("root = %+v", got)
	}
	f.getJSON("/api/v1/messages/"+strings.ToLower(rev), "", &got)
	if got.MsgID != rev || got.Text != "revised" || got.ReplacesMsgID == nil || *got.ReplacesMsgID != root {
		t.Errorf("revision = %+v", got)
	}
	_, body := f.get("/api/v1/messages/"+guestMsg, "")
	if !strings.Contains(string(body), `"sender_did":null`) || !strings.Contains(string(body), `"replaces_msgid":null`) {
		t.Errorf("guest message: %s", body)
	}
	f.getJSON("/api/v1/messages/"+secret, "alice-token", &got)
	if got.Text != "secret" {
		t.Errorf("member reads a restricted message: %+v", got)
	}
	for _, tt := range []struct {
		msgid, token string
		want         int
	}{
		{gone, "", http.StatusNotFound},
		{"01ARZ3NDEKTSV4RRFFQ69G5FAV", "", http.StatusNotFound},
		{"not-a-ulid", "", http.StatusBadRequest},
		{"01ARZ3NDEKTSV4RRFFQ69G5FA", "", http.StatusBadRequest},
		{secret, "", http.StatusForbidden},
		{secret, "mallory-token", http.StatusForbidden},
		{secret, "founder-token", http.StatusOK},
		{dm, "", http.StatusForbidden},
		{dm, "alice-token", http.StatusForbidden},
	} {
		if code := f.status("/api/v1/messages/"+tt.msgid, tt.token); code != tt.want {
			t.Errorf("GET /messages/%s with %q = %d, want %d", tt.msgid, tt.token, code, tt.want)
		}
	}
}

func TestUsers(t *testing.T) {
	f := newFixture(t, nil)
	var u rest.User
	f.getJSON("/api/v1/users/ALICE", "", &u)
	if u.Nick != "Alice" || !u.Online || u.DID == nil || *u.DID != aliceDID || u.Handle == nil || *u.Handle != "alice.example.com" {
		t.Errorf("alice = %+v", u)
	}
	_, body := f.get("/api/v1/users/bob", "")
	if strings.TrimSpace(string(body)) != `{"nick":"bob","online":true,"did":null,"handle":null}` {
		t.Errorf("bob = %s", body)
	}
	f.getJSON("/api/v1/users/Carol", "", &u)
	if u.Nick != "carol" || u.Online || u.DID == nil || *u.DID != carolDID || u.Handle != nil {
		t.Errorf("carol = %+v", u)
	}
	for target, want := range map[string]int{
		"/api/v1/users/nobody":                                http.StatusNotFound,
		"/api/v1/users/nobody/whois":                          http.StatusNotFound,
		"/api/v1/users/a%20b":                                 http.StatusBadRequest,
		"/api/v1/users/" + strings.Repeat("n", 65):            http.StatusBadRequest,
		"/api/v1/users/" + strings.Repeat("n", 65) + "/whois": http.StatusBadRequest,
		"/api/v1/users/a%00b":                                 http.StatusBadRequest,
	} {
		if code := f.status(target, ""); code != want {
			t.Errorf("GET %s = %d, want %d", target, code, want)
		}
	}
}

func TestWhois(t *testing.T) {
	f := newFixture(t, nil)
	tests := []struct {
		nick, token string
		channels    []string
	}{
		{"alice", "", []string{"#pub"}},
		{"alice", "mallory-token", []string{"#pub"}},
		{"alice", "alice-token", []string{"#enc", "#keyed", "#pub", "#secret"}},
		{"alice", "founder-token", []string{"#pub", "#secret"}},
		{"alice", "op-token", []string{"#pub", "#secret"}},
		{"carol", "", []string{}},
	}
	for _, tt := range tests {
		var w rest.Whois
		f.getJSON("/api/v1/users/"+tt.nick+"/whois", tt.token, &w)
		if !slices.Equal(w.Channels, tt.channels) {
			t.Errorf("whois %s with %q: channels %v, want %v", tt.nick, tt.token, w.Channels, tt.channels)
		}
	}
	var w rest.Whois
	f.getJSON("/api/v1/users/bob/whois", "", &w)
	if w.Username == nil || *w.Username != "~bob" || w.Host == nil || *w.Host != "palaver/s-bob" ||
		w.Realname == nil || *w.Realname != "bob Example" || w.Away == nil || *w.Away != "lunch" {
		t.Errorf("bob's whois = %+v", w)
	}
	_, body := f.get("/api/v1/users/carol/whois", "")
	if !strings.Contains(string(body), `"user":null,"host":null,"realname":null,"away":null`) {
		t.Errorf("offline whois: %s", body)
	}
}

func TestActors(t *testing.T) {
	f := newFixture(t, nil)
	var a rest.Actor
	f.getJSON("/api/v1/actors/"+aliceDID, "alice-token", &a)
	key, err := keyresolver.ParseDIDKey(aliceDID)
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := keyresolver.EncodeMultikey(key)
	if a.DID != aliceDID || !a.Online || a.Nick == nil || *a.Nick != "alice" || !slices.Equal(a.Nicks, []string{"Alice"}) ||
		!slices.Equal(a.Channels, []string{"#enc", "#keyed", "#pub", "#secret"}) || !a.Resolved ||
		a.Handle == nil || *a.Handle != "alice.example.com" || a.PDS == nil || *a.PDS != "https://pds.example.com" ||
		len(a.VerificationKeys) != 1 || a.VerificationKeys[0].PublicKeyMultibase != mb ||
		a.VerificationKeys[0].Algorithm != "ed25519" || a.VerificationKeys[0].ID != key.ID {
		t.Errorf("alice = %+v", a)
	}
	f.getJSON("/api/v1/actors/"+aliceDID, "", &a)
	if !slices.Equal(a.Channels, []string{"#pub"}) {
		t.Errorf("anonymous sees alice's channels %v", a.Channels)
	}
	// Known here but not resolvable: what the server knows, unresolved.
	f.getJSON("/api/v1/actors/"+carolDID, "", &a)
	if a.Online || a.Nick == nil || *a.Nick != "carol" || a.Resolved || a.Handle != nil || len(a.VerificationKeys) != 0 {
		t.Errorf("carol = %+v", a)
	}
	f.getJSON("/api/v1/actors/"+malloryDID, "", &a)
	if !a.Online || a.Resolved {
		t.Errorf("mallory = %+v", a)
	}
	// Resolvable but unknown here.
	f.getJSON("/api/v1/actors/"+strangeDID, "", &a)
	if a.Online || a.Nick != nil || !a.Resolved || len(a.VerificationKeys) != 1 || len(a.Nicks) != 0 {
		t.Errorf("stranger = %+v", a)
	}
	for target, want := range map[string]int{
		"/api/v1/actors/did:plc:aaaaaaaaaaaaaaaaaaaaaaaa":     http.StatusNotFound,
		"/api/v1/actors/" + founderDID:                        http.StatusNotFound,
		"/api/v1/actors/alice":                                http.StatusBadRequest,
		"/api/v1/actors/did:WEB:x":                            http.StatusBadRequest,
		"/api/v1/actors/did:web:" + strings.Repeat("a", 3000): http.StatusBadRequest,
	} {
		if code := f.status(target, ""); code != want {
			t.Errorf("GET %s = %d, want %d", target, code, want)
		}
	}
	// Without a resolver only what the server knows is served.
	f = newFixture(t, func(c *rest.Config) { c.Resolver = nil })
	f.getJSON("/api/v1/actors/"+aliceDID, "", &a)
	if a.Resolved || !a.Online {
		t.Errorf("alice without a resolver = %+v", a)
	}
	if code := f.status("/api/v1/actors/"+strangeDID, ""); code != http.StatusNotFound {
		t.Errorf("stranger without a resolver = %d", code)
	}
}
