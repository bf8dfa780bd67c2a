package node

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/federation/peering"
	"github.com/palaver-chat/palaver/federation/signing"
	"github.com/palaver-chat/palaver/keyresolver"
)

// liar is a scripted peer: its own did:web document on an httptest server, and envelopes it
// signs and posts itself.
type liar struct {
	t      *testing.T
	did    string
	key    ed25519.PrivateKey
	server *httptest.Server
	seq    int64
	// inbox answers envelopes posted to the liar (nil: 404): the status and JSON body to send.
	inbox atomic.Pointer[func(peering.Batch) (int, any)]
}

func newLiar(t *testing.T, name string) *liar {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	l := &liar{t: t, did: "did:web:" + name, key: key}
	mb, err := keyresolver.EncodeMultikey(keyresolver.PublicKey{Type: keyresolver.Ed25519, Raw: key.Public().(ed25519.PublicKey)})
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(map[string]any{"id": l.did, "verificationMethod": []map[string]string{{
		"id": l.did + "#freeq", "type": "Multikey", "controller": l.did, "publicKeyMultibase": mb}}})
	l.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch h := l.inbox.Load(); {
		case r.URL.Path == "/.well-known/did.json":
			w.Write(doc)
		case r.URL.Path == "/federation/v1/events" && h != nil:
			body, _ := io.ReadAll(r.Body)
			_, payload, _, err := peering.ParseEnvelope(body)
			b, err2 := peering.DecodeBatch(payload)
			if err != nil || err2 != nil {
				http.Error(w, "bad envelope", http.StatusBadRequest)
				return
			}
			status, answer := (*h)(b)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(answer)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(l.server.Close)
	return l
}

func (l *liar) batch(to string) peering.Batch {
	l.seq++
	return peering.Batch{From: l.did, To: to, Seq: l.seq, SentAt: time.Now().Unix()}
}

// post seals b with key and posts it to n, returning the status.
func (l *liar) post(n *Node, key ed25519.PrivateKey, b peering.Batch) int {
	l.t.Helper()
	body, err := peering.Seal(key, b)
	if err != nil {
		l.t.Fatal(err)
	}
	return l.postSigned(n, key, body)
}

// postRaw posts body, authenticated with the liar's key when body names a signer.
func (l *liar) postRaw(n *Node, body []byte) int { return l.postSigned(n, l.key, body) }

// postSigned posts body with a Palaver-Envelope header signed by key for the envelope's signer
// (none when body is not an envelope).
func (l *liar) postSigned(n *Node, key ed25519.PrivateKey, body []byte) int {
	l.t.Helper()
	req, err := http.NewRequestWithContext(testCtx(l.t), "POST", "http://"+n.HTTPAddr()+"/federation/v1/events", bytes.NewReader(body))
	if err != nil {
		l.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if env, _, _, err := peering.ParseEnvelope(body); err == nil {
		req.Header.Set(peering.EnvelopeHeader, peering.SignEnvelopeHeader(key, env.Signer, body))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		l.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// event is a message from one of the liar's users, signed with the liar's server key.
func (l *liar) event(senderDID, nick, text string) peering.Event {
	msgid := ulid.Make().String()
	venue, _ := signing.ChannelVenue("#fed")
	canonical, _ := signing.Message{Envelope: signing.Envelope{From: senderDID, MsgID: msgid, Venue: venue}, Body: text}.Canonical()
	return peering.Event{Seq: 1, MsgID: msgid, Venue: "#fed", Command: "PRIVMSG", Sender: nick + "!u@liar", SenderNick: nick,
		SenderDID: senderDID, Text: text, TimeMS: time.Now().UnixMilli(), Tags: map[string]string{"+freeq.at/sig": signing.Sign(l.key, canonical)}}
}

// TestLyingPeerIsRefused: a peer speaking the federation protocol tries each attack of
// freeq-reference §5 against beta.test; each is refused and nothing changes on the victim.
func TestLyingPeerIsRefused(t *testing.T) {
	mallory, readonly := newLiar(t, "liar.test"), newLiar(t, "readonly.test")
	victim := startNode(t, t.TempDir(), func(c *Config) {
		c.ServerName = "beta.test"
		c.AllowPrivateDID = true
		c.Peers = []peering.Peer{{DID: mallory.did, BaseURL: mallory.server.URL, Trust: peering.TrustFull},
			{DID: readonly.did, BaseURL: readonly.server.URL, Trust: peering.TrustReadonly}}
		c.Links = []peering.Link{{Channel: "#fed", Peer: mallory.did}, {Channel: "#ro", Peer: readonly.did}}
	})
	bob, res := login(t, victim, "bob", "message-tags", "echo-message")
	bob.Send("JOIN #fed")
	expect(t, bob, "366", "#fed")
	bob.Send("TOPIC #fed :the real topic")
	expect(t, bob, "TOPIC", "the real topic")
	bob.Send("PRIVMSG #fed :the victim's message")
	victimMsg := expect(t, bob, "PRIVMSG", "the victim's message").Tags["msgid"]
	to := "did:web:beta.test"
	stored := func(msgid string) bool {
		resp, _ := httpDo(t, "GET", "http://"+victim.HTTPAddr()+"/api/v1/messages/"+msgid, "", nil)
		return resp.StatusCode == 200
	}
	user := "did:web:mallory.liar.test"

	// An honest message from the peer is stored, tagged with its origin, its nick sanitised.
	honest := mallory.event(user, "mal\r\nlory", "hello")
	b := mallory.batch(to)
	b.Events = []peering.Event{honest}
	if st := mallory.post(victim, mallory.key, b); st != 200 || !stored(honest.MsgID) {
		t.Fatalf("honest event: status %d, stored %v", st, stored(honest.MsgID))
	}
	if got := expect(t, bob, "PRIVMSG", "hello"); got.Tags["+freeq.at/origin"] != "liar.test" || !strings.HasPrefix(got.Source, "mallory!") {
		t.Fatalf("relayed as %s", got.String())
	}

	_, stranger, _ := ed25519.GenerateKey(rand.Reader)
	forged := mallory.event(user, "mallory", "forged")
	forged.Tags["+freeq.at/sig"] = forged.Tags["+freeq.at/sig"][:len(forged.Tags["+freeq.at/sig"])-4] + "AAAA"
	asBob := mallory.event(res.DID, "bob", "I am bob")
	asBobsNick := mallory.event(user, "bob", "I am bob too")
	edit := mallory.event(user, "mallory", "rewritten")
	edit.ReplacesMsgID, edit.Tags["+draft/edit"] = victimMsg, victimMsg
	editAsAuthor := mallory.event(user, "mallory", "rewritten")
	editAsAuthor.SenderDID, editAsAuthor.ReplacesMsgID = res.DID, victimMsg
	del := peering.Deletion{Seq: 1, EventID: ulid.Make().String(), RootMsgID: victimMsg, AtMS: time.Now().UnixMilli(), Venue: "#fed",
		Sender: "mallory!u@liar", SenderDID: user, Tags: map[string]string{"+draft/delete": victimMsg}}
	venue, _ := signing.ChannelVenue("#fed")
	delDoc, _ := signing.Mutation{Envelope: signing.Envelope{From: user, MsgID: del.EventID, Venue: venue}, Kind: signing.KindDelete, Subject: victimMsg}.Canonical()
	del.Tags["+freeq.at/sig"] = signing.Sign(mallory.key, delDoc)
	unlinked := mallory.event(user, "mallory", "elsewhere")
	unlinked.Venue = "#other"

	with := func(mutate func(*peering.Batch)) peering.Batch {
		b := mallory.batch(to)
		mutate(&b)
		return b
	}
	envelope := with(func(*peering.Batch) {})
	envelopeBytes, _ := peering.Seal(mallory.key, envelope)
	cases := []struct {
		name   string
		send   func() int
		status int
	}{
		{"garbage", func() int { return mallory.postRaw(victim, []byte(`{"signer":`)) }, 400},
		{"unsigned", func() int {
			body, _ := json.Marshal(map[string]string{"signer": mallory.did, "payload": "e30", "signature": ""})
			return mallory.postRaw(victim, body)
		}, 400},
		{"not a configured peer", func() int {
			return mallory.post(victim, stranger, with(func(b *peering.Batch) { b.From = "did:web:stranger.test" }))
		}, 403},
		{"key not in the peer's document", func() int { return mallory.post(victim, stranger, with(func(*peering.Batch) {})) }, 401},
		{"addressed to another server", func() int {
			return mallory.post(victim, mallory.key, with(func(b *peering.Batch) { b.To = "did:web:other.test" }))
		}, 403},
		{"stale", func() int {
			return mallory.post(victim, mallory.key, with(func(b *peering.Batch) { b.SentAt -= 600 }))
		}, 401},
		{"without the envelope header", func() int {
			resp, _ := httpDo(t, "POST", "http://"+victim.HTTPAddr()+"/federation/v1/events", "", bytes.NewReader(envelopeBytes))
			return resp.StatusCode
		}, 400},
		{"first send", func() int { return mallory.postRaw(victim, envelopeBytes) }, 200},
		{"replayed", func() int { return mallory.postRaw(victim, envelopeBytes) }, 409},
		{"out of order", func() int {
			return mallory.post(victim, mallory.key, with(func(b *peering.Batch) { b.Seq = 1 }))
		}, 409},
		{"readonly peer originates", func() int {
			ev := readonly.event(user, "ro", "hi")
			ev.Venue = "#ro"
			return readonly.post(victim, readonly.key, peering.Batch{From: readonly.did, To: to, Seq: 1, SentAt: time.Now().Unix(), Events: []peering.Event{ev}})
		}, 403},
		// Accepted envelopes whose items are each dropped.
		{"lies", func() int {
			return mallory.post(victim, mallory.key, with(func(b *peering.Batch) {
				b.Events = []peering.Event{forged, asBob, asBobsNick, edit, editAsAuthor, unlinked}
				b.Deletions = []peering.Deletion{del}
				b.Topics = []peering.Topic{{Channel: "#fed", Text: "owned", SetBy: "mallory!u@liar", SetByDID: user}}
			}))
		}, 200},
	}
	for _, c := range cases {
		if got := c.send(); got != c.status {
			t.Errorf("%s: status %d, want %d", c.name, got, c.status)
		}
	}
	for _, ev := range []peering.Event{forged, asBob, asBobsNick, edit, editAsAuthor, unlinked} {
		if stored(ev.MsgID) {
			t.Errorf("%q (%s) was stored", ev.Text, ev.MsgID)
		}
	}
	if h := history(t, victim); count(h, "the victim's message") != 1 || count(h, "rewritten") != 0 {
		t.Errorf("victim history changed: %v", h)
	}
	if resp, body := httpDo(t, "GET", "http://"+victim.HTTPAddr()+"/api/v1/channels/fed/topic", "", nil); resp.StatusCode != 200 || !strings.Contains(string(body), "the real topic") {
		t.Errorf("topic = %d %s", resp.StatusCode, body)
	}

	// More than 100 events a second are refused whole.
	limited := false
	for i := 0; i < 3 && !limited; i++ {
		b := mallory.batch(to)
		for j := 0; j < peering.MaxBatchItems; j++ {
			b.Events = append(b.Events, unlinked)
		}
		limited = mallory.post(victim, mallory.key, b) == http.StatusTooManyRequests
	}
	if !limited {
		t.Error("300 events in a row were not rate limited")
	}
}
