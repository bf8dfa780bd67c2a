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

	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/federation/peering"
	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// dmEvent is a direct message from senderDID (nick) to recipientDID, signed with key as the
// sender (a peer signs for its own users with its server key).
func dmEvent(t *testing.T, key ed25519.PrivateKey, senderDID, nick, recipientDID, text string) exchange.Event {
	t.Helper()
	venue, err := signing.DMVenue(senderDID, recipientDID)
	if err != nil {
		t.Fatal(err)
	}
	msgid := ulid.Make().String()
	canonical, err := signing.Message{Envelope: signing.Envelope{From: senderDID, MsgID: msgid, Venue: venue}, Body: text}.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	return exchange.Event{OriginSeq: 1, MsgID: msgid, Venue: venue.String(), Command: "PRIVMSG", Sender: nick + "!u@a-home.test",
		SenderNick: nick, SenderDID: senderDID, Text: text, TimeMS: time.Now().UnixMilli(),
		Tags: map[string]string{"+freeq.at/sig": signing.Sign(key, canonical)}}
}

// TestDirectMessagesBetweenLinkedServers: a DM from a user here to a user the peer has shown
// present in a linked channel crosses with its msgid, and so does its delete; a DM from the peer's user reaches the local
// user, tagged with its origin, and her delete applies; a lying peer's DM that claims a local user as its sender, names
// no user of this server, or does not name its sender, is neither delivered nor stored (also
// when the local user it claims has no session left).
func TestDirectMessagesBetweenLinkedServers(t *testing.T) {
	events := make(chan exchange.Event, 64)
	deletions := make(chan eventstore.Deletion, 64)
	home, beta := scriptedHome(t, func(b traffic) (int, any) {
		for _, ev := range b.Events {
			select {
			case events <- ev:
			default:
			}
		}
		for _, d := range b.Deletions {
			select {
			case deletions <- d:
			default:
			}
		}
		return http.StatusOK, peering.Ack{OK: true}
	})
	post := func(mutate func(*traffic)) {
		t.Helper()
		b := home.batch(betaDID)
		mutate(&b)
		if st := home.send(beta, home.key, b); st != http.StatusOK {
			t.Fatalf("envelope: status %d", st)
		}
	}
	carol := "did:web:carol.a-home.test"
	bob, bobRes := login(t, beta, "bob", "message-tags", "echo-message")
	bobPub, bobKey, _ := ed25519.GenerateKey(rand.Reader)
	bob.Send("MSGSIG " + base64.RawURLEncoding.EncodeToString(bobPub))
	expect(t, bob, "MSGSIG", "OK")
	dave, daveRes := login(t, beta, "dave", "message-tags")
	bob.Send("JOIN #fed")
	expect(t, bob, "366", "#fed")
	post(func(b *traffic) {
		b.Presence = []peering.Presence{{Kind: peering.PresenceJoin, Channel: "#fed", Nick: "carol", User: "c", DID: carol}}
	})
	if got := expect(t, bob, "JOIN", "#fed"); !strings.HasPrefix(got.Source, "carol!") {
		t.Fatalf("carol joined as %s", got.String())
	}

	// bob → carol crosses, with its msgid, from the DM venue of the two DIDs.
	bob.Send("PRIVMSG " + carol + " :hello carol")
	sent := expect(t, bob, "PRIVMSG", "hello carol").Tags["msgid"]
	venue, _ := signing.DMVenue(bobRes.DID, carol)
	for crossed := false; !crossed; {
		select {
		case ev := <-events:
			if ev.Text != "hello carol" {
				continue
			}
			if ev.MsgID != sent || ev.Venue != venue.String() || ev.SenderDID != bobRes.DID || ev.Tags["+freeq.at/sig"] == "" {
				t.Fatalf("bob's DM crossed as %+v (want msgid %s in %s)", ev, sent, venue)
			}
			crossed = true
		case <-testCtx(t).Done():
			t.Fatal("bob's DM did not reach the peer")
		}
	}

	// Addressed by the remote user's nick, it goes to the same DID venue.
	bob.Send("PRIVMSG carol :by nick")
	byNick := expect(t, bob, "PRIVMSG", "by nick")
	if byNick.Params[0] != "carol" {
		t.Fatalf("echo of a DM by nick: %s", byNick.String())
	}
	for crossed := false; !crossed; {
		select {
		case ev := <-events:
			if ev.Text != "by nick" {
				continue
			}
			if ev.MsgID != byNick.Tags["msgid"] || ev.Venue != venue.String() || ev.SenderDID != bobRes.DID {
				t.Fatalf("bob's DM by nick crossed as %+v (want %s in %s)", ev, byNick.Tags["msgid"], venue)
			}
			crossed = true
		case <-testCtx(t).Done():
			t.Fatal("bob's DM by nick did not reach the peer")
		}
	}

	// bob's signed delete of it crosses too.
	delID := ulid.Make().String()
	canonical, err := signing.Mutation{Envelope: signing.Envelope{From: bobRes.DID, MsgID: delID, Venue: venue}, Kind: signing.KindDelete, Subject: sent}.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	bob.Send("@+freeq.at/eventid=" + delID + ";+draft/delete=" + sent + ";+freeq.at/sig=" + signing.Sign(bobKey, canonical) + " TAGMSG " + carol)
	select {
	case d := <-deletions:
		if d.RootMsgID != sent || d.Venue != venue.String() || d.SenderDID != bobRes.DID {
			t.Fatalf("bob's delete crossed as %+v", d)
		}
	case <-testCtx(t).Done():
		t.Fatalf("bob's delete did not reach the peer; bob saw %v", lastSeen(bob))
	}

	// carol → bob is delivered to bob, from carol, with its origin.
	reply := dmEvent(t, home.key, carol, "carol", bobRes.DID, "hi bob")
	post(func(b *traffic) { b.Events = []exchange.Event{reply} })
	got := expect(t, bob, "PRIVMSG", "hi bob")
	if got.Params[0] != "bob" || !strings.HasPrefix(got.Source, "carol!") || got.Tags["msgid"] != reply.MsgID || got.Tags["+freeq.at/origin"] != "a-home.test" {
		t.Fatalf("carol's DM arrived as %s", got.String())
	}

	// carol's signed delete of it is applied here (a DM delete is not rendered live: the REST API
	// answers 403 for a stored DM, which it does not show, and 404 once it is deleted or for none).
	status := func(msgid string) int {
		resp, _ := httpDo(t, "GET", "http://"+beta.HTTPAddr()+"/api/v1/messages/"+msgid, "", nil)
		return resp.StatusCode
	}
	if st := status(reply.MsgID); st != http.StatusForbidden {
		t.Fatalf("carol's DM: status %d, want 403 (stored)", st)
	}
	carolVenue, _ := signing.DMVenue(carol, bobRes.DID)
	carolDel := ulid.Make().String()
	canonical, err = signing.Mutation{Envelope: signing.Envelope{From: carol, MsgID: carolDel, Venue: carolVenue}, Kind: signing.KindDelete, Subject: reply.MsgID}.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	post(func(b *traffic) {
		b.Deletions = []eventstore.Deletion{{Seq: 1, RootMsgID: reply.MsgID, At: time.Now(), Venue: carolVenue.String(),
			Deleter: eventstore.Deleter{Sender: "carol!u@a-home.test", SenderDID: carol, Tags: map[string]string{"+draft/delete": reply.MsgID,
				"+freeq.at/sig": signing.Sign(home.key, canonical), "msgid": carolDel}}}}
	})
	if st := status(reply.MsgID); st != http.StatusNotFound {
		t.Fatalf("carol's DM after her delete: status %d, want 404", st)
	}

	// Lies: bob (a local user) as the sender; a recipient who is no user here; a venue that does
	// not name its sender. Then an honest DM to dave, which must be the first he gets.
	asBob := dmEvent(t, home.key, bobRes.DID, "notbob", daveRes.DID, "as bob")
	stranger := dmEvent(t, home.key, carol, "carol", "did:web:nobody.elsewhere.test", "to a stranger")
	unnamed := dmEvent(t, home.key, carol, "carol", daveRes.DID, "venue without its sender")
	unnamed.Venue = asBob.Venue
	honest := dmEvent(t, home.key, carol, "carol", daveRes.DID, "honest")
	post(func(b *traffic) { b.Events = []exchange.Event{asBob, stranger, unnamed, honest} })
	first, err := dave.Expect(testCtx(t), func(m ircmsg.Message) bool { return m.Command == "PRIVMSG" })
	if err != nil || first.Tags["msgid"] != honest.MsgID {
		t.Fatalf("dave's first DM = %s, %v (want the honest one, %s)", first.String(), err, honest.MsgID)
	}
	if st := status(honest.MsgID); st != http.StatusForbidden {
		t.Fatalf("the honest DM: status %d, want 403 (stored)", st)
	}
	// bob is still a user of this server once he has gone: his session key is registered here.
	bob.Close()
	eventually(t, "bob's session ended", func() bool {
		n := 0
		beta.machine.Read(func(st *fsm.State) { n = len(st.SessionsByDID(bobRes.DID)) })
		return n == 0
	})
	asAbsentBob := dmEvent(t, home.key, bobRes.DID, "bob", daveRes.DID, "as bob, gone")
	honestAgain := dmEvent(t, home.key, carol, "carol", daveRes.DID, "honest again")
	post(func(b *traffic) { b.Events = []exchange.Event{asAbsentBob, honestAgain} })
	next, err := dave.Expect(testCtx(t), func(m ircmsg.Message) bool { return m.Command == "PRIVMSG" })
	if err != nil || next.Tags["msgid"] != honestAgain.MsgID {
		t.Fatalf("dave's next DM = %s, %v (want %s)", next.String(), err, honestAgain.MsgID)
	}
	for _, lie := range []exchange.Event{asBob, stranger, unnamed, asAbsentBob} {
		if st := status(lie.MsgID); st != http.StatusNotFound {
			t.Errorf("lie %q: status %d, want 404 (not stored)", lie.Text, st)
		}
	}
}
