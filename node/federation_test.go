package node

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/federation/peering"
	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

const (
	alphaDID = "did:web:alpha.test" // the three-node cluster; home of linked channels (sorts first)
	betaDID  = "did:web:beta.test"  // the single node
)

// forwarder is a loopback address held for a whole test that forwards HTTP to a node's listener:
// the base URL a peer is configured with before the node starts, and that survives the node's
// restarts. (Reserving a port, releasing it and binding it again later is a race: another process
// of a parallel `go test ./...` may take the port in between.) With no node behind it, it answers
// 502, as a server that is down would fail; pointing it at nothing also cuts the connections it
// carries (a stream upgraded through it included), as a link that drops would.
type forwarder struct {
	srv    *httptest.Server
	target atomic.Pointer[url.URL]
	mu     sync.Mutex
	conns  map[net.Conn]bool // the connections accepted, until closed
}

func newForwarder(t *testing.T) *forwarder {
	f := &forwarder{conns: map[net.Conn]bool{}}
	proxy := &httputil.ReverseProxy{
		Rewrite:      func(r *httputil.ProxyRequest) { r.SetURL(f.target.Load()) },
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) },
	}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.target.Load() == nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	f.srv.Listener = &trackingListener{Listener: f.srv.Listener, f: f}
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	return f
}

// trackingListener records the forwarder's connections, so that a cut closes them.
type trackingListener struct {
	net.Listener
	f *forwarder
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.f.mu.Lock()
	l.f.conns[c] = true
	l.f.mu.Unlock()
	return &trackedConn{Conn: c, f: l.f}, nil
}

type trackedConn struct {
	net.Conn
	f *forwarder
}

func (c *trackedConn) Close() error {
	c.f.mu.Lock()
	delete(c.f.conns, c.Conn)
	c.f.mu.Unlock()
	return c.Conn.Close()
}

// addr is the forwarder's host:port.
func (f *forwarder) addr() string { return f.srv.Listener.Addr().String() }

// to forwards to n's HTTP listener (nil: to nothing, and the connections it carries are cut).
func (f *forwarder) to(n *Node) {
	if n == nil {
		f.target.Store(nil)
		f.mu.Lock()
		defer f.mu.Unlock()
		for c := range f.conns {
			c.Close()
		}
		return
	}
	f.target.Store(&url.URL{Scheme: "http", Host: n.HTTPAddr()})
}

// federated configures a node as a server that peers with peerDID at peerAddr over #fed.
func federated(serverName, peerDID, peerAddr string) func(*Config) {
	return func(c *Config) {
		c.ServerName = serverName
		c.AllowPrivateDID = true
		c.Peers = []peering.Peer{{DID: peerDID, BaseURL: "http://" + peerAddr, Trust: peering.TrustFull}}
		c.Links = []peering.Link{{Channel: "#fed", Peer: peerDID}}
		c.FederationSendEvery = 50e6 // 50 ms
	}
}

// startAlpha starts the alpha.test cluster, which reaches beta.test at betaAddr.
func startAlpha(t *testing.T, betaAddr string) []*Node {
	t.Helper()
	return startNamedCluster(t, "alpha.test", federated("alpha.test", betaDID, betaAddr))
}

// fedUser logs in with a did:key, registers a MSGSIG session key, joins #fed and asks for -t (on
// the home it applies and crosses; on the other side it is a request the home may refuse).
func fedUser(t *testing.T, n *Node, nick string) (*ircclient.Client, string, ed25519.PrivateKey) {
	t.Helper()
	c, res := login(t, n, nick, "message-tags", "echo-message", "server-time")
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	c.Send("MSGSIG " + base64.RawURLEncoding.EncodeToString(pub))
	expect(t, c, "MSGSIG", "OK")
	c.Send("JOIN #fed")
	expect(t, c, "366", "#fed")
	c.Send("MODE #fed -t")
	syncClient(t, c)
	return c, res.DID, priv
}

// signedMutation builds a signed edit (PRIVMSG with +draft/edit) or delete (TAGMSG) line.
func signedEdit(t *testing.T, did string, key ed25519.PrivateKey, root, text string) (line, msgid string) {
	t.Helper()
	msgid = ulid.Make().String()
	venue, _ := signing.ChannelVenue("#fed")
	canonical, err := signing.Message{Envelope: signing.Envelope{From: did, MsgID: msgid, Venue: venue}, Body: text, Edit: root}.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	return "@+freeq.at/eventid=" + msgid + ";+draft/edit=" + root + ";+freeq.at/sig=" + signing.Sign(key, canonical) + " PRIVMSG #fed :" + text, msgid
}

func signedDelete(t *testing.T, did string, key ed25519.PrivateKey, root string) string {
	t.Helper()
	msgid := ulid.Make().String()
	venue, _ := signing.ChannelVenue("#fed")
	canonical, err := signing.Mutation{Envelope: signing.Envelope{From: did, MsgID: msgid, Venue: venue}, Kind: signing.KindDelete, Subject: root}.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	return "@+freeq.at/eventid=" + msgid + ";+draft/delete=" + root + ";+freeq.at/sig=" + signing.Sign(key, canonical) + " TAGMSG #fed"
}

// expectDelete waits for the TAGMSG that deletes root.
func expectDelete(t *testing.T, c *ircclient.Client, root string) {
	t.Helper()
	if _, err := c.Expect(testCtx(t), func(m ircmsg.Message) bool {
		return m.Command == "TAGMSG" && m.Tags["+draft/delete"] == root
	}); err != nil {
		t.Fatalf("waiting for the delete of %s: %v\nseen: %v", root, err, lastSeen(c))
	}
}

// history returns the texts of #fed's REST history on a node.
func history(t *testing.T, n *Node) []string {
	t.Helper()
	resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/api/v1/channels/fed/history?limit=200", "", nil)
	if resp.StatusCode != 200 {
		return nil
	}
	var msgs []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(body, &msgs)
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m.Text)
	}
	return out
}

func count(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}

// verifies reports whether GET /api/v1/verify/{msgid} on n answers valid with key_source
// origin-server and the expected proof.
func verifies(t *testing.T, n *Node, msgid, proves string) bool {
	resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/api/v1/verify/"+msgid, "", nil)
	var v struct {
		Verdict      string `json:"verdict"`
		KeySource    string `json:"key_source"`
		Verification struct {
			Proves string `json:"proves"`
		} `json:"verification"`
	}
	return resp.StatusCode == 200 && json.Unmarshal(body, &v) == nil && v.Verdict == "valid" &&
		v.KeySource == "origin-server" && v.Verification.Proves == proves
}

// TestFederationBetweenTwoDeployments links #fed between a three-node cluster (alpha.test) and a
// single node (beta.test): messages, edits, deletes and topics cross both ways with their msgids,
// verify answers valid with key_source origin-server on either side (also on a node that did not
// receive the envelope), and after the link is cut and restored nothing is lost or duplicated.
func TestFederationBetweenTwoDeployments(t *testing.T) {
	betaURL := newForwarder(t) // beta's base URL, configured on alpha before beta starts
	alpha := startAlpha(t, betaURL.addr())
	betaDir := t.TempDir()
	betaCfg := federated("beta.test", alphaDID, alpha[0].HTTPAddr())
	beta := startNode(t, betaDir, betaCfg)
	betaURL.to(beta)

	// The cluster's did:web document lists every node's server key.
	resp, body := httpDo(t, "GET", "http://"+alpha[2].HTTPAddr()+"/.well-known/did.json", "", nil)
	if resp.StatusCode != 200 || strings.Count(string(body), "publicKeyMultibase") != 3 {
		t.Fatalf("alpha did.json = %d %s", resp.StatusCode, body)
	}

	alice, aliceDID, aliceKey := fedUser(t, alpha[1], "alice") // on node b of the cluster
	bob, bobDID, bobKey := fedUser(t, beta, "bob")
	// Operators are each server's own: each side makes the other's user an op by DID, so their
	// changes are accepted (each side checks the actor against its own state).
	bob.Send("MODE #fed +o " + aliceDID)
	expect(t, bob, "MODE", "#fed", "+o", aliceDID)
	alice.Send("MODE #fed +o " + bobDID)
	expect(t, alice, "MODE", "#fed", "+o", bobDID)

	// alpha → beta: a client-signed message keeps its msgid and signature, tagged with its origin.
	line, fromAlice, _ := signedLine(t, aliceDID, aliceKey, "#fed", "hello from alpha")
	alice.Send(line)
	got := expect(t, bob, "PRIVMSG", "hello from alpha")
	if got.Tags["msgid"] != fromAlice || got.Tags["+freeq.at/origin"] != "alpha.test" || got.Tags["+freeq.at/sig"] == "" {
		t.Fatalf("beta got %s, want msgid %s from alpha.test", got.String(), fromAlice)
	}
	// beta → alpha: a message the server signed (no client signature).
	bob.Send("PRIVMSG #fed :hello from beta")
	fromBob := expect(t, bob, "PRIVMSG", "hello from beta").Tags["msgid"]
	got = expect(t, alice, "PRIVMSG", "hello from beta")
	if got.Tags["msgid"] != fromBob || got.Tags["+freeq.at/origin"] != "beta.test" {
		t.Fatalf("alpha got %s, want msgid %s from beta.test", got.String(), fromBob)
	}
	eventually(t, "verify on both sides", func() bool {
		return verifies(t, beta, fromAlice, "authorship") && verifies(t, alpha[2], fromBob, "relay") &&
			verifies(t, alpha[0], fromBob, "relay")
	})

	// Edits both ways.
	line, _ = signedEdit(t, aliceDID, aliceKey, fromAlice, "hello from alpha (edited)")
	alice.Send(line)
	if got := expect(t, bob, "PRIVMSG", "hello from alpha (edited)"); got.Tags["+draft/edit"] != fromAlice {
		t.Fatalf("edit relayed as %s", got.String())
	}
	line, _ = signedEdit(t, bobDID, bobKey, fromBob, "hello from beta (edited)")
	bob.Send(line)
	expect(t, alice, "PRIVMSG", "hello from beta (edited)")

	// Deletes both ways.
	bob.Send(signedDelete(t, bobDID, bobKey, fromBob))
	expectDelete(t, alice, fromBob)
	alice.Send(signedDelete(t, aliceDID, aliceKey, fromAlice))
	expectDelete(t, bob, fromAlice)
	eventually(t, "deletes on every node", func() bool {
		for _, n := range append([]*Node{beta}, alpha...) {
			if h := history(t, n); count(h, "hello from beta (edited)")+count(h, "hello from alpha (edited)") != 0 {
				return false
			}
		}
		return true
	})

	// Topics: alpha is the home. Its topic crosses; beta's request comes back applied by the home.
	alice.Send("TOPIC #fed :set on the home")
	expect(t, bob, "TOPIC", "#fed", "set on the home")
	bob.Send("TOPIC #fed :asked by beta")
	expect(t, alice, "TOPIC", "#fed", "asked by beta")

	// Modes: alpha is the home. Alice's ban crosses (bob made her an op on beta); bob's +m is a
	// request the home applies (alice made bob an op on alpha) and echoes.
	alice.Send("MODE #fed +b *!*@spam.example")
	expect(t, bob, "MODE", "#fed", "+b", "*!*@spam.example")
	bob.Send("MODE #fed +m")
	expect(t, alice, "MODE", "#fed", "+m")
	expect(t, bob, "MODE", "#fed", "+m")

	// Reactions cross with the reactor's signature.
	bob.Send("PRIVMSG #fed :react to me")
	reactRoot := expect(t, alice, "PRIVMSG", "react to me").Tags["msgid"]
	evid, rtags := reaction(t, aliceDID, aliceKey, reactRoot, "👍")
	alice.Send("@+freeq.at/eventid=" + evid + ";+react=👍;+reply=" + reactRoot + ";+freeq.at/sig=" + rtags["+freeq.at/sig"] + " TAGMSG #fed")
	if got := expect(t, bob, "TAGMSG", "#fed"); got.Tags["msgid"] != evid || got.Tags["+freeq.at/origin"] != "alpha.test" {
		t.Fatalf("reaction relayed as %s", got.String())
	}
	alice.Send("MODE #fed -m")
	expect(t, bob, "MODE", "#fed", "-m")

	// Direct messages cross both ways between users present in the linked channel; alice is on
	// node b, and beta's envelopes may reach any node of alpha.
	bob.Send("PRIVMSG " + aliceDID + " :psst alice")
	if got := expect(t, alice, "PRIVMSG", "psst alice"); got.Params[0] != "alice" || got.Tags["+freeq.at/origin"] != "beta.test" {
		t.Fatalf("bob's DM arrived as %s", got.String())
	}
	alice.Send("PRIVMSG " + bobDID + " :psst bob")
	if got := expect(t, bob, "PRIVMSG", "psst bob"); got.Params[0] != "bob" || got.Tags["+freeq.at/origin"] != "alpha.test" {
		t.Fatalf("alice's DM arrived as %s", got.String())
	}

	// Presence: beta's members are listed on every node of alpha (beta's envelopes reach node a;
	// Raft spreads them), and leave when beta stops: by their own QUIT when beta's last envelope
	// carried it, or when alpha notices the link dropped.
	watch, _ := guest(t, alpha[2], "watch")
	watch.Send("JOIN #fed")
	if names := expect(t, watch, "353", "#fed"); !strings.Contains(names.Params[3], "bob") {
		t.Fatalf("NAMES on node c = %s", names.String())
	}
	watch.Send("WHOIS bob")
	expect(t, watch, "312", "bob", "beta.test")

	// Cut the link: beta stops; alpha's users keep talking; beta comes back and catches up.
	beta.Close()
	betaURL.to(nil)
	if _, err := watch.Expect(testCtx(t), func(m ircmsg.Message) bool {
		return m.Command == "QUIT" && strings.HasPrefix(m.Source, "bob!")
	}); err != nil {
		t.Fatalf("bob did not leave when beta stopped: %v\nseen: %v", err, lastSeen(watch))
	}
	var sent []string
	for i, n := range alpha {
		c, _ := guest(t, n, "g"+string(rune('a'+i)), "message-tags", "echo-message")
		c.Send("JOIN #fed")
		expect(t, c, "366", "#fed")
		text := "while beta was down " + string(rune('a'+i))
		c.Send("PRIVMSG #fed :" + text)
		expect(t, c, "PRIVMSG", text)
		sent = append(sent, text)
	}
	beta = startNode(t, betaDir, betaCfg)
	betaURL.to(beta)
	watcher, _ := guest(t, beta, "watcher")
	watcher.Send("JOIN #fed") // the channel ended with its last member; history is per channel
	expect(t, watcher, "366", "#fed")
	eventually(t, "catch-up on beta", func() bool {
		h := history(t, beta)
		for _, s := range sent {
			if count(h, s) != 1 {
				return false
			}
		}
		return count(h, "hello from alpha") == 0 && count(h, "hello from beta") == 0
	})
	// Nothing was sent twice: the history of beta holds each message once, and alpha holds beta's
	// messages once too.
	for _, n := range alpha {
		if h := history(t, n); count(h, "hello from beta") != 0 {
			t.Fatalf("alpha history after catch-up: %v", h)
		}
	}
}
