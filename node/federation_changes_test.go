package node

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/federation/peering"
	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// modesOf answers MODE #chan's mode string on c.
func modesOf(t *testing.T, c *ircclient.Client, channel string) string {
	t.Helper()
	c.Send("MODE " + channel)
	return expect(t, c, "324", channel).Params[2]
}

// reaction builds a react TAGMSG's tags for root, signed with key as did.
func reaction(t *testing.T, did string, key ed25519.PrivateKey, root, emoji string) (eventID string, tags map[string]string) {
	t.Helper()
	eventID = ulid.Make().String()
	venue, _ := signing.ChannelVenue("#fed")
	canonical, err := signing.Mutation{Envelope: signing.Envelope{From: did, MsgID: eventID, Venue: venue}, Kind: signing.KindReact, Subject: root, Emoji: emoji}.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	return eventID, map[string]string{"+react": emoji, "+reply": root, "+freeq.at/sig": signing.Sign(key, canonical)}
}

// TestChannelStateFollowsTheHome: on the non-home side a MODE or PIN of a linked channel is a
// request to the home, applied when the home answers; the home's own changes apply only when
// their actor is an operator here; a sync never weakens the channel; a relay peer may not send
// state; reactions cross both ways with the reactor's signature, and a peer cannot react as a
// local user or without a valid signature.
func TestChannelStateFollowsTheHome(t *testing.T) {
	changes := make(chan peering.Change, 16)
	reactions := make(chan eventstore.ReactionEvent, 16)
	relay := newLiar(t, "a-relay.test")
	home, beta := scriptedHome(t, func(b traffic) (int, any) {
		for _, c := range b.Changes {
			changes <- c
		}
		for _, r := range b.Reactions {
			reactions <- r
		}
		return http.StatusOK, peering.Ack{OK: true}
	}, func(c *Config) {
		c.Peers = append(c.Peers, peering.Peer{DID: relay.did, BaseURL: relay.server.URL, Trust: peering.TrustRelay})
		c.Links = append(c.Links, peering.Link{Channel: "#relay", Peer: relay.did})
	})
	relay.accept(beta)
	nextChange := func() peering.Change {
		t.Helper()
		select {
		case c := <-changes:
			return c
		case <-testCtx(t).Done():
			t.Fatal("no change reached the home")
		}
		return peering.Change{}
	}
	to := "did:web:beta.test"
	post := func(l *liar, mutate func(*traffic)) {
		t.Helper()
		b := l.batch(to)
		mutate(&b)
		if st := l.send(beta, l.key, b); st != http.StatusOK {
			t.Fatalf("envelope: status %d", st)
		}
	}
	homeOp, stranger := "did:web:op.a-home.test", "did:web:nobody.a-home.test"

	bob, res := login(t, beta, "bob", "message-tags", "echo-message")
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	bob.Send("MSGSIG " + base64.RawURLEncoding.EncodeToString(pub))
	expect(t, bob, "MSGSIG", "OK")
	bob.Send("JOIN #fed,#relay")
	expect(t, bob, "366", "#relay")

	// A local op's MODE is a request: not applied until the home answers.
	bob.Send("MODE #fed +m")
	req := nextChange()
	if req.Kind != peering.ChangeMode || len(req.Modes) != 1 || req.Modes[0] != (peering.ModeChange{Add: true, Mode: "m"}) || req.ActorDID != res.DID || req.RequestID == "" {
		t.Fatalf("request = %+v", req)
	}
	if m := modesOf(t, bob, "#fed"); strings.Contains(m, "m") {
		t.Fatalf("+m applied before the home answered: %s", m)
	}
	post(home, func(b *traffic) { b.Changes = []peering.Change{req} })
	expect(t, bob, "MODE", "#fed", "+m")

	// Ops are each server's own: bob trusts the home's op by DID (applied here, not sent).
	bob.Send("MODE #fed +o " + homeOp)
	expect(t, bob, "MODE", "#fed", "+o", homeOp)

	// The home's changes: by its op they apply; by a stranger, as bob without a request, as a
	// sync that would weaken, or from a relay peer, nothing changes.
	post(home, func(b *traffic) {
		b.Changes = []peering.Change{
			{Kind: peering.ChangeMode, Channel: "#fed", Actor: "nobody!u@a-home.test", ActorDID: stranger, Modes: []peering.ModeChange{{Mode: "m"}}},
			{Kind: peering.ChangeMode, Channel: "#fed", Actor: req.Actor, ActorDID: res.DID, Modes: []peering.ModeChange{{Mode: "m"}}},
			{Kind: peering.ChangeMode, Channel: "#fed", Actor: "a-home.test", Sync: true, Modes: []peering.ModeChange{{Mode: "m"}, {Add: true, Mode: "I", Arg: "*!*@*"}}},
			{Kind: peering.ChangeMode, Channel: "#fed", Actor: "op!u@a-home.test", ActorDID: homeOp, Modes: []peering.ModeChange{{Add: true, Mode: "b", Arg: "*!*@spam.example"}}},
		}
	})
	expect(t, bob, "MODE", "#fed", "+b", "*!*@spam.example")
	post(relay, func(b *traffic) {
		b.Changes = []peering.Change{{Kind: peering.ChangeMode, Channel: "#relay", Actor: "r!u@a-relay.test", ActorDID: "did:web:r.a-relay.test",
			Modes: []peering.ModeChange{{Add: true, Mode: "i"}}}}
	})
	if m := modesOf(t, bob, "#fed"); !strings.Contains(m, "m") {
		t.Fatalf("#fed lost +m to a lie: %s", m)
	}
	if m := modesOf(t, bob, "#relay"); strings.Contains(m, "i") {
		t.Fatalf("a relay peer set a mode: %s", m)
	}
	bob.Send("MODE #fed I")
	expect(t, bob, "347", "#fed")
	for _, m := range bob.Seen() {
		if m.Command == "346" {
			t.Fatalf("a sync added an invite exception: %s", m.String())
		}
	}

	// Pins: the home's op pins bob's message; bob's own PIN is a request.
	bob.Send("PRIVMSG #fed :pin me")
	root := expect(t, bob, "PRIVMSG", "pin me").Tags["msgid"]
	post(home, func(b *traffic) {
		b.Changes = []peering.Change{{Kind: peering.ChangePin, Channel: "#fed", Actor: "nobody!u@a-home.test", ActorDID: stranger, MsgID: root},
			{Kind: peering.ChangePin, Channel: "#fed", Actor: "op!u@a-home.test", ActorDID: homeOp, MsgID: root}}
	})
	if got := expect(t, bob, "NOTICE", "#fed", "pinned"); got.Tags["+freeq.at/pin"] != root || !strings.HasPrefix(got.Source, "op!") {
		t.Fatalf("pin rendered as %s", got.String())
	}
	bob.Send("UNPIN #fed " + root)
	if c := nextChange(); c.Kind != peering.ChangeUnpin || c.MsgID != root || c.RequestID == "" {
		t.Fatalf("unpin request = %+v", c)
	}

	// Reactions: bob's crosses with his signature; the home's user's arrives; lies do not.
	evid, tags := reaction(t, res.DID, priv, root, "👍")
	bob.Send("@+freeq.at/eventid=" + evid + ";+react=👍;+reply=" + root + ";+freeq.at/sig=" + tags["+freeq.at/sig"] + " TAGMSG #fed")
	select {
	case r := <-reactions:
		if r.EventID != evid || r.SenderDID != res.DID || r.Tags["+freeq.at/sig"] != tags["+freeq.at/sig"] || r.Tags["+react"] != "👍" {
			t.Fatalf("reaction sent as %+v", r)
		}
	case <-testCtx(t).Done():
		t.Fatal("bob's reaction did not reach the home")
	}
	user := "did:web:carol.a-home.test"
	honestID, honest := reaction(t, user, home.key, root, "🎉")
	asBobID, asBob := reaction(t, res.DID, home.key, root, "👎")
	badID, bad := reaction(t, user, home.key, root, "💥")
	bad["+freeq.at/sig"] = bad["+freeq.at/sig"][:len(bad["+freeq.at/sig"])-4] + "AAAA"
	unsignedID, unsigned := reaction(t, user, home.key, root, "🙈")
	delete(unsigned, "+freeq.at/sig")
	r := func(id, did, nick string, tags map[string]string) eventstore.ReactionEvent {
		return eventstore.ReactionEvent{EventID: id, Root: tags["+reply"], Reactor: did, ReactorNick: nick, Emoji: tags["+react"], Venue: "#fed",
			Sender: nick + "!u@a-home.test", SenderDID: did, Tags: tags, At: time.Now()}
	}
	post(home, func(b *traffic) {
		b.Reactions = []eventstore.ReactionEvent{r(asBobID, res.DID, "notbob", asBob), r(badID, user, "carol", bad),
			r(unsignedID, user, "carol", unsigned), r(honestID, user, "carol", honest)}
	})
	got, err := bob.Expect(testCtx(t), func(m ircmsg.Message) bool {
		return m.Command == "TAGMSG" && m.Tags["+reply"] == root && !isFrom(m, "bob")
	})
	if err != nil || got.Tags["msgid"] != honestID || got.Tags["+freeq.at/origin"] != "a-home.test" {
		t.Fatalf("first reaction from the home = %s, %v (want the honest one, %s)", got.String(), err, honestID)
	}
}
