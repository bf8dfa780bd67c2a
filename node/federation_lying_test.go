package node

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/federation/peering"
	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/signing"
)

// liar is a scripted peer: its own did:web document on an httptest server, the envelopes it
// signs and posts itself, and its own stream to a victim (what its users originate travels
// there, as a server's does). It also receives: the streams and envelopes a victim sends it are
// handed to inbox.
type liar struct {
	t      *testing.T
	did    string
	key    ed25519.PrivateKey
	server *httptest.Server
	seq    int64
	// inbox answers what the liar receives (nil: 404): the status and JSON body for an
	// envelope. A stream's frames are handed to it as traffic of their messages, deletes and
	// reactions, and its status decides the stream: anything but 200 refuses the stream or ends
	// it (a heartbeat asks with empty traffic), as a server that is down would.
	inbox atomic.Pointer[func(traffic) (int, any)]
	// victims: the server keys of the nodes whose streams the liar accepts (accept).
	mu       sync.Mutex
	victims  map[string]ed25519.PublicKey // kid → key
	accepted chan struct{}                // closed by the first accept
	once     sync.Once
	// smu guards the liar's own streams, by victim HTTP address, and the last origin seq they
	// carried.
	smu       sync.Mutex
	streams   map[string]*exchange.ServerConn
	originSeq int64
}

// traffic is what the liar sends or receives: an envelope's authority (its Batch), and the
// messages, deletes and reactions a server originates, which travel on its stream only.
type traffic struct {
	peering.Batch
	Events    []exchange.Event
	Deletions []eventstore.Deletion
	Reactions []eventstore.ReactionEvent
}

func newLiar(t *testing.T, name string) *liar {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	l := &liar{t: t, did: "did:web:" + name, key: key, victims: map[string]ed25519.PublicKey{}, accepted: make(chan struct{}),
		streams: map[string]*exchange.ServerConn{}}
	mb, err := keyresolver.EncodeMultikey(keyresolver.PublicKey{Type: keyresolver.Ed25519, Raw: key.Public().(ed25519.PublicKey)})
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(map[string]any{"id": l.did, "verificationMethod": []map[string]string{{
		"id": l.did + "#freeq", "type": "Multikey", "controller": l.did, "publicKeyMultibase": mb}}})
	ctx, cancel := context.WithCancel(context.Background())
	streams := exchange.ServerStreamHandler(ctx, l, slog.New(slog.NewTextHandler(io.Discard, nil)))
	l.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch h := l.inbox.Load(); {
		case r.URL.Path == "/.well-known/did.json":
			w.Write(doc)
		case r.URL.Path == exchange.ServerStreamPath && h != nil:
			streams.ServeHTTP(w, r)
		case r.URL.Path == "/federation/v1/events" && h != nil:
			body, _ := io.ReadAll(r.Body)
			_, payload, _, err := peering.ParseEnvelope(body)
			b, err2 := peering.DecodeBatch(payload)
			if err != nil || err2 != nil {
				http.Error(w, "bad envelope", http.StatusBadRequest)
				return
			}
			status, answer := (*h)(traffic{Batch: b})
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(answer)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(func() {
		cancel()
		l.smu.Lock()
		for _, c := range l.streams {
			c.Close()
		}
		l.smu.Unlock()
		l.server.CloseClientConnections()
		l.server.Close()
	})
	return l
}

// accept has the liar accept the streams of n's node (their requests are signed with its key).
func (l *liar) accept(n *Node) {
	pub := n.serverKey.Public().(ed25519.PublicKey)
	l.mu.Lock()
	l.victims[signing.KID(pub)] = pub
	l.mu.Unlock()
	l.once.Do(func() { close(l.accepted) })
}

// The liar as the receiving end of a victim's stream (exchange.Servers; it sends nothing through
// an exchange of its own).
func (l *liar) Routes() []exchange.ServerRoute                    { return nil }
func (l *liar) DueMessage(string, eventstore.Message) bool        { return false }
func (l *liar) DueDeletion(string, eventstore.Deletion) bool      { return false }
func (l *liar) DueReaction(string, eventstore.ReactionEvent) bool { return false }
func (l *liar) StreamUp(string)                                   {}
func (l *liar) StreamDown(string, error)                          {}

func (l *liar) AuthenticateStream(r *http.Request) (string, ed25519.PublicKey, int, error) {
	select { // a victim streams from its start, before the test could call accept
	case <-l.accepted:
	case <-time.After(5 * time.Second):
		return "", nil, http.StatusServiceUnavailable, errors.New("no victim accepted yet")
	case <-r.Context().Done():
		return "", nil, http.StatusServiceUnavailable, r.Context().Err()
	}
	if h := l.inbox.Load(); h != nil {
		if status, _ := (*h)(traffic{}); status != http.StatusOK {
			return "", nil, status, fmt.Errorf("the liar answers %d", status)
		}
	}
	signer, pub, err := exchange.VerifyRequest(r.Header, func(_, kid string) (ed25519.PublicKey, bool) {
		l.mu.Lock()
		defer l.mu.Unlock()
		pub, ok := l.victims[kid]
		return pub, ok
	}, http.MethodGet, exchange.ServerStreamPath, nil, time.Now())
	if err != nil {
		return "", nil, http.StatusUnauthorized, err
	}
	return signer, pub, http.StatusOK, nil
}

func (l *liar) ReceiveFrame(_ context.Context, _ string, f exchange.ServerFrame) (exchange.Taken, error) {
	h := l.inbox.Load()
	if h == nil {
		return exchange.Taken{}, errors.New("the liar receives nothing")
	}
	if status, _ := (*h)(traffic{Events: f.Events, Deletions: f.Deletions, Reactions: f.Reactions}); status != http.StatusOK {
		return exchange.Taken{}, fmt.Errorf("the liar answers %d", status)
	}
	return exchange.Taken{Events: len(f.Events), Deletions: len(f.Deletions), Reactions: len(f.Reactions)}, nil
}

func (l *liar) batch(to string) traffic {
	l.seq++
	return traffic{Batch: peering.Batch{From: l.did, To: to, Seq: l.seq, SentAt: time.Now().Unix()}}
}

// send sends b to n as a server of the liar's would: its messages, deletes and reactions on the
// liar's stream to n (signed with the liar's key), the rest in an envelope signed with key (none
// when there is nothing else). It returns the status: 200, the stream's refusal, or the
// envelope's answer.
func (l *liar) send(n *Node, key ed25519.PrivateKey, b traffic) int {
	l.t.Helper()
	if len(b.Events)+len(b.Deletions)+len(b.Reactions) > 0 {
		if _, err := l.stream(n, b); err != nil {
			var refused *exchange.RefusedError
			if errors.As(err, &refused) {
				return refused.Status
			}
			l.t.Fatalf("the liar's stream: %v", err)
		}
		b.Events, b.Deletions, b.Reactions = nil, nil, nil
		if b.Items() == 0 && !b.WantPresence {
			return http.StatusOK
		}
	}
	return l.post(n, key, b)
}

// stream sends what b originates as one frame of the liar's stream to n (opened, or opened again
// after an error, as needed), and returns how much of each list n took.
func (l *liar) stream(n *Node, b traffic) (exchange.Taken, error) {
	l.t.Helper()
	l.smu.Lock()
	defer l.smu.Unlock()
	c := l.streams[n.HTTPAddr()]
	if c == nil {
		var err error
		c, err = exchange.DialServerStream(testCtx(l.t), http.DefaultClient, "http://"+n.HTTPAddr()+exchange.ServerStreamPath, l.key, l.did)
		if err != nil {
			return exchange.Taken{}, err
		}
		l.streams[n.HTTPAddr()] = c
	}
	taken, err := c.Send(l.frame(b))
	if err != nil {
		c.Close()
		delete(l.streams, n.HTTPAddr())
	}
	return taken, err
}

// frame is b's messages, deletes and reactions as a frame of the liar's stream: each list in
// the liar's origin order (its seqs are the liar's, whatever b says).
func (l *liar) frame(b traffic) exchange.ServerFrame {
	f := exchange.ServerFrame{Events: slices.Clone(b.Events), Deletions: slices.Clone(b.Deletions), Reactions: slices.Clone(b.Reactions)}
	next := func() int64 { l.originSeq++; return l.originSeq }
	for i := range f.Events {
		f.Events[i].OriginSeq = next()
	}
	for i := range f.Deletions {
		f.Deletions[i].Seq = next()
	}
	for i := range f.Reactions {
		f.Reactions[i].Seq = next()
	}
	return f
}

// post seals b with key and posts it to n, returning the status.
func (l *liar) post(n *Node, key ed25519.PrivateKey, b traffic) int {
	l.t.Helper()
	body, err := peering.Seal(key, b.Batch)
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
func (l *liar) event(senderDID, nick, text string) exchange.Event {
	msgid := ulid.Make().String()
	venue, _ := signing.ChannelVenue("#fed")
	canonical, _ := signing.Message{Envelope: signing.Envelope{From: senderDID, MsgID: msgid, Venue: venue}, Body: text}.Canonical()
	return exchange.Event{OriginSeq: 1, MsgID: msgid, Venue: "#fed", Command: "PRIVMSG", Sender: nick + "!u@liar", SenderNick: nick,
		SenderDID: senderDID, Text: text, TimeMS: time.Now().UnixMilli(), Tags: map[string]string{"+freeq.at/sig": signing.Sign(l.key, canonical)}}
}

// sealWith seals b with key as Seal does, with one more field in its payload: what a peer of
// another make might add to an envelope.
func sealWith(t *testing.T, key ed25519.PrivateKey, b peering.Batch, field string, value any) []byte {
	t.Helper()
	var payload map[string]any
	raw, _ := json.Marshal(b)
	if err := json.Unmarshal(raw, &payload); err != nil {
		t.Fatal(err)
	}
	payload[field] = value
	raw, _ = json.Marshal(payload)
	env, _ := json.Marshal(peering.Envelope{Signer: b.From, Payload: base64.RawURLEncoding.EncodeToString(raw),
		Signature: signing.Sign(key, append([]byte("palaver federation batch v1\n"), raw...))})
	return env
}

// TestLyingPeerIsRefused: a peer speaking the federation protocol (its stream and its
// envelopes) tries each attack of freeq-reference §5 against beta.test; each is refused and
// nothing changes on the victim.
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
	b.Events = []exchange.Event{honest}
	if st := mallory.send(victim, mallory.key, b); st != 200 || !stored(honest.MsgID) {
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
	delID := ulid.Make().String()
	del := eventstore.Deletion{Seq: 1, RootMsgID: victimMsg, At: time.Now(), Venue: "#fed",
		Deleter: eventstore.Deleter{Sender: "mallory!u@liar", SenderDID: user, Tags: map[string]string{"+draft/delete": victimMsg, "msgid": delID}}}
	venue, _ := signing.ChannelVenue("#fed")
	delDoc, _ := signing.Mutation{Envelope: signing.Envelope{From: user, MsgID: delID, Venue: venue}, Kind: signing.KindDelete, Subject: victimMsg}.Canonical()
	del.Tags["+freeq.at/sig"] = signing.Sign(mallory.key, delDoc)
	unlinked := mallory.event(user, "mallory", "elsewhere")
	unlinked.Venue = "#other"

	with := func(mutate func(*traffic)) traffic {
		b := mallory.batch(to)
		mutate(&b)
		return b
	}
	// dial opens a stream to the victim signed by key for signer: the status it was answered.
	dial := func(key ed25519.PrivateKey, signer string) int {
		c, err := exchange.DialServerStream(testCtx(t), http.DefaultClient, "http://"+victim.HTTPAddr()+exchange.ServerStreamPath, key, signer)
		var refused *exchange.RefusedError
		switch {
		case errors.As(err, &refused):
			return refused.Status
		case err != nil:
			t.Fatalf("dialing the victim: %v", err)
		}
		c.Close()
		return http.StatusSwitchingProtocols
	}
	envelope := with(func(*traffic) {})
	envelopeBytes, _ := peering.Seal(mallory.key, envelope.Batch)
	cases := []struct {
		name   string
		send   func() int
		status int
	}{
		{"stream: not a configured peer", func() int { return dial(stranger, "did:web:stranger.test") }, 403},
		{"stream: key not in the peer's document", func() int { return dial(stranger, mallory.did) }, 401},
		{"stream: readonly peer", func() int { return dial(readonly.key, readonly.did) }, 403},
		{"stream: the peer", func() int { return dial(mallory.key, mallory.did) }, 101},
		{"garbage", func() int { return mallory.postRaw(victim, []byte(`{"signer":`)) }, 400},
		{"unsigned", func() int {
			body, _ := json.Marshal(map[string]string{"signer": mallory.did, "payload": "e30", "signature": ""})
			return mallory.postRaw(victim, body)
		}, 400},
		{"not a configured peer", func() int {
			return mallory.post(victim, stranger, with(func(b *traffic) { b.From = "did:web:stranger.test" }))
		}, 403},
		{"key not in the peer's document", func() int { return mallory.post(victim, stranger, with(func(*traffic) {})) }, 401},
		{"addressed to another server", func() int {
			return mallory.post(victim, mallory.key, with(func(b *traffic) { b.To = "did:web:other.test" }))
		}, 403},
		{"stale", func() int {
			return mallory.post(victim, mallory.key, with(func(b *traffic) { b.SentAt -= 600 }))
		}, 401},
		{"without the envelope header", func() int {
			resp, _ := httpDo(t, "POST", "http://"+victim.HTTPAddr()+"/federation/v1/events", "", bytes.NewReader(envelopeBytes))
			return resp.StatusCode
		}, 400},
		{"first send", func() int { return mallory.postRaw(victim, envelopeBytes) }, 200},
		{"replayed", func() int { return mallory.postRaw(victim, envelopeBytes) }, 409},
		{"out of order", func() int {
			return mallory.post(victim, mallory.key, with(func(b *traffic) { b.Seq = 1 }))
		}, 409},
		{"readonly peer originates", func() int {
			return readonly.post(victim, readonly.key, traffic{Batch: peering.Batch{From: readonly.did, To: to, Seq: 1, SentAt: time.Now().Unix(),
				Topics: []peering.Topic{{Channel: "#ro", Text: "mine", SetBy: "ro!u@readonly.test", AtMS: time.Now().UnixMilli()}}}})
		}, 403},
		// Accepted streams and envelopes whose items are each dropped: the lies in a frame of
		// the peer's stream, the topic in its envelope.
		{"lies", func() int {
			return mallory.send(victim, mallory.key, with(func(b *traffic) {
				b.Events = []exchange.Event{forged, asBob, asBobsNick, edit, editAsAuthor, unlinked}
				b.Deletions = []eventstore.Deletion{del}
				b.Topics = []peering.Topic{{Channel: "#fed", Text: "owned", SetBy: "mallory!u@liar", SetByDID: user}}
			}))
		}, 200},
		// An envelope carries authority only: one that names messages or deletes is malformed,
		// refused whole.
		{"messages in an envelope", func() int {
			return mallory.postRaw(victim, sealWith(t, mallory.key, with(func(*traffic) {}).Batch, "events", []exchange.Event{honest}))
		}, 400},
		{"deletes in an envelope", func() int {
			return mallory.postRaw(victim, sealWith(t, mallory.key, with(func(*traffic) {}).Batch, "deletions", []map[string]any{{"seq": 1, "event_id": delID, "root_msgid": victimMsg}}))
		}, 400},
	}
	for _, c := range cases {
		if got := c.send(); got != c.status {
			t.Errorf("%s: status %d, want %d", c.name, got, c.status)
		}
	}
	for _, ev := range []exchange.Event{forged, asBob, asBobsNick, edit, editAsAuthor, unlinked} {
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

	// More than 100 items a second: an envelope of them is refused whole; on the stream they
	// wait, so 300 items take at least the two seconds the limit refills 200 in.
	limited := false
	for i := 0; i < 3 && !limited; i++ {
		b := mallory.batch(to)
		for j := 0; j < peering.MaxBatchItems; j++ {
			b.Topics = append(b.Topics, peering.Topic{Channel: "#other", Text: "elsewhere", SetBy: "mallory!u@liar", AtMS: time.Now().UnixMilli()})
		}
		limited = mallory.post(victim, mallory.key, b) == http.StatusTooManyRequests
	}
	if !limited {
		t.Error("300 topics in envelopes in a row were not rate limited")
	}
	start := time.Now()
	for range 3 {
		b := mallory.batch(to)
		for j := 0; j < peering.MaxBatchItems; j++ {
			b.Events = append(b.Events, unlinked)
		}
		if taken, err := mallory.stream(victim, b); err != nil || taken.Events != peering.MaxBatchItems {
			t.Fatalf("a frame of 100 items: taken %+v, %v", taken, err)
		}
	}
	if took := time.Since(start); took < 1900*time.Millisecond {
		t.Errorf("300 items on the stream took %s: the limit of 100 a second was not kept", took)
	}
}
