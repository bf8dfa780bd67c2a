package node

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// signedLine signs a channel PRIVMSG with key and returns the line to send (with the event id the
// signature covers).
func signedLine(t *testing.T, did string, key ed25519.PrivateKey, channel, text string) (line, msgid, sigTag string) {
	t.Helper()
	msgid = ulid.Make().String()
	venue, err := signing.ChannelVenue(channel)
	if err != nil {
		t.Fatal(err)
	}
	canonical, err := signing.Message{Envelope: signing.Envelope{From: did, MsgID: msgid, Venue: venue}, Body: text}.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	sigTag = signing.Sign(key, canonical)
	return "@+freeq.at/eventid=" + msgid + ";+freeq.at/sig=" + sigTag + " PRIVMSG " + channel + " :" + text, msgid, sigTag
}

func TestMessageSignaturesOnArrival(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	caps := []string{"message-tags", "echo-message"}
	id := newEd25519(t)
	alice, res := loginAs(t, n, id, "alice", caps...)
	bob, _ := guest(t, n, "bob", caps...)
	for _, c := range []*ircclient.Client{alice, bob} {
		c.Send("JOIN #signed")
		expect(t, c, "366", "#signed")
	}

	// Register a session key.
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	alice.Send("MSGSIG " + base64.RawURLEncoding.EncodeToString(pub))
	expect(t, alice, "MSGSIG", "OK")

	// A valid client signature is relayed byte for byte, under the event id it covers.
	line, msgid, sig := signedLine(t, res.DID, priv, "#signed", "signed by me")
	alice.Send(line)
	got := expect(t, bob, "PRIVMSG", "signed by me")
	if got.Tags["+freeq.at/sig"] != sig || got.Tags["msgid"] != msgid {
		t.Fatalf("relayed %s, want sig %s and msgid %s", got.String(), sig, msgid)
	}
	if _, leaked := got.Tags["+freeq.at/eventid"]; leaked {
		t.Fatalf("eventid relayed: %s", got.String())
	}
	assertVerify(t, n, msgid, "valid", "authorship", "local-session")

	// An invalid one is refused and not delivered.
	bad, _, _ := signedLine(t, res.DID, priv, "#signed", "original")
	bad = strings.Replace(bad, ":original", ":tampered", 1)
	alice.Send(bad)
	expect(t, alice, "FAIL", "PRIVMSG", "SIGNATURE_INVALID")

	// Unsigned text from an authenticated user is signed by the server key over the same document.
	alice.Send("PRIVMSG #signed :server signs this")
	got = expect(t, bob, "PRIVMSG", "server signs this")
	serverPub := n.serverKey.Public().(ed25519.PublicKey)
	venue, _ := signing.ChannelVenue("#signed")
	canonical, _ := signing.Message{Envelope: signing.Envelope{From: res.DID, MsgID: got.Tags["msgid"], Venue: venue}, Body: "server signs this"}.Canonical()
	verdict, reason := signing.Verify(canonical, got.Tags["+freeq.at/sig"], func(kid string) (ed25519.PublicKey, bool) {
		return serverPub, kid == signing.KID(serverPub)
	})
	if verdict != signing.Valid {
		t.Fatalf("server signature %q: %v %s", got.Tags["+freeq.at/sig"], verdict, reason)
	}
	assertVerify(t, n, got.Tags["msgid"], "valid", "relay", "server-key")
	if strings.Contains(bob.Seen()[len(bob.Seen())-1].String(), "tampered") {
		t.Fatal("the tampered message was delivered")
	}

	// Guests' messages go unsigned, whatever they send.
	bob.Send("@+freeq.at/sig=ed25519:AAAAAAAAAAAAAAAAAAAAAA:AAAA PRIVMSG #signed :guest text")
	got = expect(t, alice, "PRIVMSG", "guest text")
	if _, has := got.Tags["+freeq.at/sig"]; has {
		t.Fatalf("guest message carries a signature: %s", got.String())
	}

	// Mutations by an authenticated user need the user's own signature.
	alice.Send("@+draft/delete=" + msgid + " TAGMSG #signed")
	expect(t, alice, "FAIL", "TAGMSG", "SIGNATURE_REQUIRED")
	alice.Send("@+draft/edit=" + msgid + " PRIVMSG #signed :unsigned edit")
	expect(t, alice, "FAIL", "EDIT", "SIGNATURE_REQUIRED")

	// A signed edit and a signed delete are accepted and relayed with their signatures.
	editID := ulid.Make().String()
	editDoc, _ := signing.Message{Envelope: signing.Envelope{From: res.DID, MsgID: editID, Venue: venue}, Body: "signed edit", Edit: msgid}.Canonical()
	editSig := signing.Sign(priv, editDoc)
	alice.Send("@+freeq.at/eventid=" + editID + ";+draft/edit=" + msgid + ";+freeq.at/sig=" + editSig + " PRIVMSG #signed :signed edit")
	got = expect(t, bob, "PRIVMSG", "signed edit")
	if got.Tags["+freeq.at/sig"] != editSig || got.Tags["+draft/edit"] != msgid {
		t.Fatalf("signed edit relayed as %s", got.String())
	}
	delID := ulid.Make().String()
	delDoc, _ := signing.Mutation{Envelope: signing.Envelope{From: res.DID, MsgID: delID, Venue: venue}, Kind: signing.KindDelete, Subject: msgid}.Canonical()
	delSig := signing.Sign(priv, delDoc)
	alice.Send("@+freeq.at/eventid=" + delID + ";+draft/delete=" + msgid + ";+freeq.at/sig=" + delSig + " TAGMSG #signed")
	got = expect(t, bob, "TAGMSG", "#signed")
	if got.Tags["+draft/delete"] != msgid || got.Tags["+freeq.at/sig"] != delSig {
		t.Fatalf("signed delete relayed as %s", got.String())
	}
}

func TestEventIDRefusals(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	alice, _ := login(t, n, "alice", "message-tags")
	bob, _ := guest(t, n, "bob", "message-tags")
	for _, c := range []*ircclient.Client{alice, bob} {
		c.Send("JOIN #ids")
		expect(t, c, "366", "#ids")
	}
	fresh := ulid.Make().String()
	old := ulid.MustNew(ulid.Timestamp(time.Now().Add(-10*time.Minute)), rand.Reader).String()
	bob.Send("@+freeq.at/eventid=" + fresh + " PRIVMSG #ids :x")
	expect(t, bob, "FAIL", "PRIVMSG", "EVENTID_NOT_AUTHENTICATED")
	alice.Send("@+freeq.at/eventid=" + strings.ToLower(fresh) + " PRIVMSG #ids :x")
	expect(t, alice, "FAIL", "PRIVMSG", "INVALID_EVENTID")
	alice.Send("@+freeq.at/eventid=" + old + " PRIVMSG #ids :x")
	expect(t, alice, "FAIL", "PRIVMSG", "EVENTID_CLOCK_SKEW")
	alice.Send("@+freeq.at/eventid=" + fresh + " PRIVMSG #ids :first")
	got := expect(t, bob, "PRIVMSG", "first")
	if got.Tags["msgid"] != fresh {
		t.Fatalf("msgid %q, want the adopted %q", got.Tags["msgid"], fresh)
	}
	alice.Send("@+freeq.at/eventid=" + fresh + " PRIVMSG #ids :again")
	expect(t, alice, "FAIL", "PRIVMSG", "EVENTID_IN_USE")
}

func TestMSGSIGRefusals(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	g, _ := guest(t, n, "guest1")
	g.Send("MSGSIG " + base64.RawURLEncoding.EncodeToString(make([]byte, 32)))
	expect(t, g, "FAIL", "MSGSIG", "NOT_AUTHENTICATED")
	a, _ := login(t, n, "keyholder")
	a.Send("MSGSIG not-base64!")
	expect(t, a, "FAIL", "MSGSIG", "INVALID_KEY", "32-byte")
	a.Send("MSGSIG " + base64.RawURLEncoding.EncodeToString(make([]byte, 16)))
	expect(t, a, "FAIL", "MSGSIG", "INVALID_KEY", "32-byte")
	notPoint := make([]byte, 32)
	notPoint[0] = 2 // y = 2 is not on the curve
	a.Send("MSGSIG " + base64.RawURLEncoding.EncodeToString(notPoint))
	expect(t, a, "FAIL", "MSGSIG", "INVALID_KEY", "Invalid ed25519 public key")
}

// assertVerify checks GET /api/v1/verify/{msgid} on the node.
func assertVerify(t *testing.T, n *Node, msgid, verdict, proves, keySource string) {
	t.Helper()
	resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/api/v1/verify/"+msgid, "", nil)
	var v struct {
		Verdict      string `json:"verdict"`
		KeySource    string `json:"key_source"`
		Verification struct {
			Proves string `json:"proves"`
		} `json:"verification"`
	}
	if err := json.Unmarshal(body, &v); err != nil || resp.StatusCode != 200 || v.Verdict != verdict ||
		v.Verification.Proves != proves || v.KeySource != keySource {
		t.Fatalf("verify %s = %d %s; want %s/%s/%s", msgid, resp.StatusCode, body, verdict, proves, keySource)
	}
}

// TestSignOutRetiresTheKeyAndEndsItsSessions: the owner retires a MSGSIG key over REST; the session
// signing with it ends, its token dies, and the key stays listed with its retirement date.
func TestSignOutRetiresTheKeyAndEndsItsSessions(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	alice, res := login(t, n, "alice")
	other, otherRes := loginAs(t, n, newEd25519(t), "other")
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	alice.Send("MSGSIG " + base64.RawURLEncoding.EncodeToString(pub))
	expect(t, alice, "MSGSIG", "OK")
	kid := signing.KID(pub)
	base := "http://" + n.HTTPAddr()
	// Someone else cannot retire it: their sign-out changes nothing.
	resp, body := httpDo(t, "POST", base+"/api/v1/devices/sign-out", otherRes.Token, strings.NewReader(`{"kid":"`+kid+`"}`))
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"sessions_closed":0`) {
		t.Fatalf("sign-out of another's key = %d %s", resp.StatusCode, body)
	}
	resp, body = httpDo(t, "POST", base+"/api/v1/devices/sign-out", res.Token, strings.NewReader(`{"kid":"`+kid+`"}`))
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"sessions_closed":1`) || !strings.Contains(string(body), `"tokens_revoked":1`) {
		t.Fatalf("sign-out = %d %s", resp.StatusCode, body)
	}
	expect(t, alice, "FAIL", "MSGSIG", "KEY_RETIRED")
	eventually(t, "the token to die with the session", func() bool {
		resp, _ := httpDo(t, "GET", base+"/api/v1/favorites", res.Token, nil)
		return resp.StatusCode == 401
	})
	resp, body = httpDo(t, "GET", base+"/api/v1/signing-keys/"+res.DID+"/"+kid, "", nil)
	if resp.StatusCode != 200 || strings.Contains(string(body), `"removed_at":null`) {
		t.Fatalf("retired key by kid = %d %s", resp.StatusCode, body)
	}
	syncClient(t, other) // the other session is untouched
}

// TestExpiredKeyEndsItsSession: when a MSGSIG key's lifetime ends, the sweep closes the session
// signing with it (FAIL MSGSIG KEY_EXPIRED) and its token dies; the key is then left out of the
// DID's list but still served by kid.
func TestExpiredKeyEndsItsSession(t *testing.T) {
	n := startNode(t, t.TempDir(), func(c *Config) {
		c.SigningKeyLifetime, c.KeySweepEvery = 2*time.Second, 50*time.Millisecond
	})
	alice, res := login(t, n, "alice")
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	alice.Send("MSGSIG " + base64.RawURLEncoding.EncodeToString(pub))
	expect(t, alice, "MSGSIG", "OK")
	expect(t, alice, "FAIL", "MSGSIG", "KEY_EXPIRED")
	base := "http://" + n.HTTPAddr()
	eventually(t, "the token to die", func() bool {
		resp, _ := httpDo(t, "GET", base+"/api/v1/favorites", res.Token, nil)
		return resp.StatusCode == 401
	})
	_, body := httpDo(t, "GET", base+"/api/v1/signing-keys/"+res.DID, "", nil)
	if strings.Contains(string(body), signing.KID(pub)) {
		t.Fatalf("expired key still listed: %s", body)
	}
	resp, _ := httpDo(t, "GET", base+"/api/v1/signing-keys/"+res.DID+"/"+signing.KID(pub), "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("expired key by kid = %d", resp.StatusCode)
	}
}
