package rest_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/testcluster/poll"
)

// TestNodeUsersAndActors: users, WHOIS and actors of users made over IRC.
func TestNodeUsersAndActors(t *testing.T) {
	n := sharedNode(t)
	a := newAPI(t, n)
	alice := loginUser(t, n, "us-alice", ircCaps...)
	alice.join(t, "#us-open")
	alice.join(t, "#us-closed")
	alice.send(t, "MODE #us-closed +k secret")
	alice.sync(t)
	bob := loginUser(t, n, "us-bob", ircCaps...)
	guest := guestUser(t, n, "us-guest", ircCaps...)
	guest.send(t, "AWAY :gone fishing")
	guest.sync(t)

	var u rest.User
	a.getJSON("/api/v1/users/US-ALICE", "", &u)
	if u.Nick != "us-alice" || !u.Online || u.DID == nil || *u.DID != alice.did || u.Handle != nil {
		t.Errorf("user = %+v", u)
	}
	for _, tt := range []struct {
		token, who string
		want       []string
	}{
		{"", "nobody", []string{"#us-open"}},
		{bob.token, "a non-member", []string{"#us-open"}},
		{alice.token, "herself", []string{"#us-closed", "#us-open"}},
	} {
		var w rest.Whois
		a.getJSON("/api/v1/users/us-alice/whois", tt.token, &w)
		if !slices.Equal(w.Channels, tt.want) || w.Username == nil || w.Host == nil {
			t.Errorf("whois asked by %s = %+v, want channels %v", tt.who, w, tt.want)
		}
	}
	var w rest.Whois
	a.getJSON("/api/v1/users/us-guest/whois", "", &w)
	if w.DID != nil || w.Away == nil || *w.Away != "gone fishing" || len(w.Channels) != 0 {
		t.Errorf("guest whois = %+v", w)
	}

	// An owned nick stays known after its session ends.
	bob.Close()
	poll.Until(t, "us-bob's session to end", func() bool {
		a.getJSON("/api/v1/users/us-bob", "", &u)
		return !u.Online
	})
	if u.DID == nil || *u.DID != bob.did {
		t.Errorf("offline owner = %+v", u)
	}
	if code := a.status("/api/v1/users/us-nobody", ""); code != http.StatusNotFound {
		t.Errorf("unknown user = %d", code)
	}

	var actor rest.Actor
	a.getJSON("/api/v1/actors/"+alice.did, "", &actor)
	key, err := keyresolver.ParseDIDKey(alice.did)
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := keyresolver.EncodeMultikey(key)
	if !actor.Online || actor.Nick == nil || *actor.Nick != "us-alice" || !slices.Equal(actor.Nicks, []string{"us-alice"}) ||
		!actor.Resolved || len(actor.VerificationKeys) != 1 || actor.VerificationKeys[0].PublicKeyMultibase != mb ||
		!slices.Equal(actor.Channels, []string{"#us-open"}) {
		t.Errorf("actor = %+v", actor)
	}
	a.getJSON("/api/v1/actors/"+bob.did, "", &actor)
	if actor.Online || actor.Nick == nil || *actor.Nick != "us-bob" || !actor.Resolved {
		t.Errorf("offline actor = %+v", actor)
	}
	for path, want := range map[string]int{
		"/api/v1/actors/did:example:nobody": http.StatusNotFound, // unsupported method: resolved without I/O
		"/api/v1/actors/nobody":             http.StatusBadRequest,
	} {
		if code := a.status(path, ""); code != want {
			t.Errorf("GET %s = %d, want %d", path, code, want)
		}
	}
}

// TestNodeServerRoutes: health, metrics, the contract document, the
// protected-resource metadata, /irc, CORS and favourites.
func TestNodeServerRoutes(t *testing.T) {
	n := sharedNode(t)
	a := newAPI(t, n)
	var health map[string]any
	a.getJSON("/api/v1/health", "", &health)
	for _, field := range []string{"server_name", "connections", "channels", "uptime_secs", "av", "node", "role", "term"} {
		if _, ok := health[field]; !ok {
			t.Errorf("health lacks %s: %v", field, health)
		}
	}
	if health["server_name"] != "palaver.test" || health["av"] != true { // the forwarding unit started
		t.Errorf("health = %v", health)
	}
	resp, body := a.get("/metrics", "")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") ||
		!strings.Contains(string(body), "palaver_http_requests_total") || !strings.Contains(string(body), "palaver_channels") {
		t.Errorf("metrics: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for path, ct := range map[string]string{
		"/api/v1/openapi.json": "application/json", "/openapi.json": "application/json", "/api/v1/openapi.yaml": "application/yaml",
	} {
		resp, body := a.get(path, "")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != ct || !strings.Contains(string(body), "3.1.0") {
			t.Errorf("%s: %d %q", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	var meta map[string]any
	a.getJSON("/.well-known/oauth-protected-resource", "", &meta)
	if !strings.HasSuffix(meta["resource_documentation"].(string), "/auth.md") {
		t.Errorf("metadata = %v", meta)
	}
	resp, _ = a.get("/irc", "")
	if resp.StatusCode != http.StatusUpgradeRequired {
		t.Errorf("/irc without upgrade = %d", resp.StatusCode)
	}
	resp, _ = a.do("OPTIONS", "/api/v1/channels", "", nil, "Origin", "http://localhost:5173", "Access-Control-Request-Method", "GET")
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" {
		t.Errorf("preflight: %d %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	resp, _ = a.do("GET", "/api/v1/channels", "", nil, "Origin", "https://evil.example")
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Error("a foreign origin is allowed")
	}

	u := loginUser(t, n, "fav-user")
	resp, body = a.do("PUT", "/api/v1/favorites", u.token, []byte(`{"favorites":["#Fav","nope","#fav","&x"]}`))
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != `{"favorites":["#fav","&x"]}` {
		t.Errorf("PUT favorites: %d %s", resp.StatusCode, body)
	}
	var favs struct{ Favorites []string }
	a.getJSON("/api/v1/favorites", u.token, &favs)
	if !slices.Equal(favs.Favorites, []string{"#fav", "&x"}) {
		t.Errorf("GET favorites = %v", favs)
	}
	resp, _ = a.get("/api/v1/favorites", "")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Errorf("favorites without a bearer: %d", resp.StatusCode)
	}
	resp, body = a.do("DELETE", "/api/v1/channels", "", nil)
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("DELETE /api/v1/channels = %d", resp.StatusCode)
	}
	var e rest.ErrorObject
	if err := json.Unmarshal(body, &e); err != nil || e.Error != "Method Not Allowed" {
		t.Errorf("405 body %s", body)
	}
}
