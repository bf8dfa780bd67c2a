package irc_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

func TestGuestRegistersOverTCP(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	c, welcome := guest(t, n, "alice")
	if !strings.Contains(welcome.Param(1), "(guest)") {
		t.Fatalf("001 = %q, want a guest welcome", welcome.String())
	}
	expect(t, c, "005", "CASEMAPPING=ascii")
	expect(t, c, "005", "CHATHISTORY=500")
	if err := c.Send("JOIN #lobby"); err != nil {
		t.Fatal(err)
	}
	expect(t, c, "JOIN", "#lobby")
	expect(t, c, "353", "@alice")
	expect(t, c, "366", "#lobby")
}

func TestSASLLoginsOverEveryTransport(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	cases := []struct {
		name   string
		dial   func(*testing.T, *Node) *ircclient.Client
		signer func(*testing.T) ircclient.Signer
	}{
		{"ed25519 over TCP", dial, newEd25519},
		{"secp256k1 over TCP", dial, newSecp256k1},
		{"ed25519 over WebSocket", dialWS, newEd25519},
		{"secp256k1 over WebSocket", dialWS, newSecp256k1},
		{"ed25519 over TLS", dialTLS, newEd25519},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.dial(t, n)
			s := tc.signer(t)
			res, err := c.LoginSASL(testCtx(t), s, "agent"+string(rune('a'+i)))
			if err != nil {
				t.Fatalf("login: %v", err)
			}
			if res.DID != s.DID() || len(res.Token) < 22 {
				t.Fatalf("login result = %+v", res)
			}
			welcome := expectSeen(t, c, "001")
			if !strings.Contains(welcome.Param(1), "authenticated as "+s.DID()) {
				t.Fatalf("001 = %q", welcome.String())
			}
			resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/api/v1/favorites", res.Token, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("favorites with bearer: %d %s", resp.StatusCode, body)
			}
		})
	}
}

func TestBearerTokenDiesWithTheSession(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	c, res := login(t, n, "bot")
	url := "http://" + n.HTTPAddr() + "/api/v1/favorites"
	resp, body := httpDo(t, "PUT", url, res.Token, strings.NewReader(`{"favorites":["#Go","#rust","nochannel"]}`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT favorites: %d %s", resp.StatusCode, body)
	}
	var fav struct{ Favorites []string }
	if err := json.Unmarshal(body, &fav); err != nil || strings.Join(fav.Favorites, ",") != "#go,#rust" {
		t.Fatalf("stored favorites = %s (%v)", body, err)
	}
	resp, _ = httpDo(t, "GET", url, "not-a-token", nil)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Fatalf("bad token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if err := c.Send("QUIT :bye"); err != nil {
		t.Fatal(err)
	}
	expect(t, c, "ERROR")
	eventually(t, "the token to be refused after QUIT", func() bool {
		resp, _ := httpDo(t, "GET", url, res.Token, nil)
		return resp.StatusCode == http.StatusUnauthorized
	})
}

func TestSASLChallengeIsSingleUse(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	c := dial(t, n)
	s := newEd25519(t)
	c.Send("CAP LS 302")
	ch := challenge(t, c)
	payload := saslResponse(t, s.DID(), sign(t, s, ch))
	c.Send("AUTHENTICATE " + payload)
	expect(t, c, "903")
	expect(t, c, "NOTICE", "API-BEARER ")
	// The same response again: the challenge was consumed.
	c.Send("AUTHENTICATE " + payload)
	expect(t, c, "904")
	// A fresh challenge works.
	ch2 := challenge(t, c)
	c.Send("AUTHENTICATE " + saslResponse(t, s.DID(), sign(t, s, ch2)))
	expect(t, c, "903")
}

func TestSASLChallengeReplayAfterFailure(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	c := dial(t, n)
	s, other := newEd25519(t), newEd25519(t)
	ch := challenge(t, c)
	c.Send("AUTHENTICATE " + saslResponse(t, s.DID(), sign(t, other, ch)))
	expect(t, c, "904", "SASL authentication failed")
	// The right signature over the consumed challenge is refused: a new challenge is needed.
	c.Send("AUTHENTICATE " + saslResponse(t, s.DID(), sign(t, s, ch)))
	expect(t, c, "904")
	ch2 := challenge(t, c)
	c.Send("AUTHENTICATE " + saslResponse(t, s.DID(), sign(t, s, ch2)))
	expect(t, c, "903")
}

func TestSASLChallengeExpires(t *testing.T) {
	clock := &testClock{}
	n := startNode(t, t.TempDir(), func(c *Config) { c.Clock = clock.Now })
	c := dial(t, n)
	s := newEd25519(t)
	ch := challenge(t, c)
	clock.Advance(61 * time.Second)
	c.Send("AUTHENTICATE " + saslResponse(t, s.DID(), sign(t, s, ch)))
	expect(t, c, "904", "no challenge")
	ch2 := challenge(t, c)
	c.Send("AUTHENTICATE " + saslResponse(t, s.DID(), sign(t, s, ch2)))
	expect(t, c, "903")
}

func TestThreeBadSignaturesDisconnect(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	c := dial(t, n)
	s, other := newEd25519(t), newEd25519(t)
	for i := 0; i < 3; i++ {
		ch := challenge(t, c)
		c.Send("AUTHENTICATE " + saslResponse(t, s.DID(), sign(t, other, ch)))
		expect(t, c, "904")
	}
	expect(t, c, "ERROR", "Too many SASL failures")
	for {
		_, err := c.ReadMessage(testCtx(t))
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil && !strings.Contains(err.Error(), "closed") {
			t.Fatalf("want the connection closed, got %v", err)
		}
		if err != nil {
			return
		}
	}
}

func TestGuestRegistersAfterFailedSASL(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	c := dial(t, n)
	s, other := newEd25519(t), newEd25519(t)
	c.Send("CAP LS 302")
	c.Send("CAP REQ :sasl")
	ch := challenge(t, c)
	c.Send("AUTHENTICATE " + saslResponse(t, s.DID(), sign(t, other, ch)))
	expect(t, c, "904")
	c.Send("NICK fallback")
	c.Send("USER fallback 0 * :Fallback")
	c.Send("CAP END")
	w := expect(t, c, "001")
	if !strings.Contains(w.Param(1), "(guest)") {
		t.Fatalf("001 = %q", w.String())
	}
}

func TestBadSASLInputChangesNothing(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	s := newEd25519(t)
	cases := []struct {
		name    string
		payload func(ch []byte) string
	}{
		{"not base64", func([]byte) string { return "!!!not-base64!!!" }},
		{"padded base64", func([]byte) string { return base64.URLEncoding.EncodeToString([]byte(`{"did":"did:key:x"}`)) }},
		{"not JSON", func([]byte) string { return base64.RawURLEncoding.EncodeToString([]byte("hello")) }},
		{"no did", func(ch []byte) string {
			return base64.RawURLEncoding.EncodeToString([]byte(`{"signature":"AAAA"}`))
		}},
		{"unknown DID method", func(ch []byte) string { return saslResponse(t, "did:example:123", sign(t, s, ch)) }},
		{"malformed did:key", func(ch []byte) string { return saslResponse(t, "did:key:zNotAKey", sign(t, s, ch)) }},
		{"unknown method", func(ch []byte) string {
			body, _ := json.Marshal(map[string]string{"did": s.DID(), "signature": "AAAA", "method": "telepathy"})
			return base64.RawURLEncoding.EncodeToString(body)
		}},
		{"truncated signature", func(ch []byte) string { return saslResponse(t, s.DID(), sign(t, s, ch)[:40]) }},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, n)
			ch := challenge(t, c)
			c.Send("AUTHENTICATE " + tc.payload(ch))
			expect(t, c, "904")
			// Nothing changed: the connection still registers, as a guest.
			w, err := c.Register(testCtx(t), fmt.Sprintf("badsasl%d", i))
			if err != nil {
				t.Fatalf("register after bad SASL: %v", err)
			}
			if !strings.Contains(w.Param(1), "(guest)") {
				t.Fatalf("001 = %q", w.String())
			}
		})
	}
}

func TestStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	owner := newEd25519(t)
	n := startNode(t, dir, nil)
	c, _ := loginAs(t, n, owner, "alice", "draft/chathistory", "batch", "server-time")
	for _, line := range []string{
		"JOIN #persist", "MODE #persist +imk sekrit", "MODE #persist +b *!*@bad.example",
		"MODE #persist +b did:key:z6MkBanned", "TOPIC #persist :keep me", "PRIVMSG #persist :remember this",
	} {
		c.Send(line)
	}
	expect(t, c, "TOPIC", "keep me")
	syncClient(t, c)
	if err := n.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	n2 := startNode(t, dir, nil)
	// A guest asking for alice is renamed: the nick belongs to the owner's DID.
	g := dial(t, n2)
	w, err := g.Register(testCtx(t), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if w.Param(0) == "alice" || !strings.HasPrefix(w.Param(0), "Guest") {
		t.Fatalf("guest got nick %q, want a Guest rename", w.Param(0))
	}
	g.Send("QUIT")
	c2, _ := loginAs(t, n2, owner, "alice", "draft/chathistory", "batch", "server-time")
	expectSeen(t, c2, "001")
	c2.Send("MODE #persist")
	expect(t, c2, "324", "#persist", "+ntimk")
	c2.Send("MODE #persist b")
	expect(t, c2, "367", "*!*@bad.example")
	expect(t, c2, "367", "did:key:z6MkBanned")
	c2.Send("JOIN #persist")
	expect(t, c2, "332", "keep me")
	c2.Send("CHATHISTORY LATEST #persist * 10")
	expect(t, c2, "PRIVMSG", "remember this")
}
