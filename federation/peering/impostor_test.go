package peering

import (
	"context"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// TestPeerCannotSpeakAsOfflineLocalUsers: a peer's events, presence and DMs that name a user of
// this server (its owned nick or a look-alike of it, its DID, a DID with a key registered here) are refused whether or
// not that user is online, and the peer does not choose the host its users are shown with.
func TestPeerCannotSpeakAsOfflineLocalUsers(t *testing.T) {
	now := time.Now()
	const alice, carol, remote = "did:plc:aliceaaaaaaaaaaaaaaaaaaa", "did:plc:carolccccccccccccccccccc", "did:plc:remoterrrrrrrrrrrrrrrrrr"
	fx := fsm.NewFixture()
	fx.SetNickOwner("alice", alice) // owns a nick, offline
	fx.SetNickOwner("paypal", carol)
	fx.AddKey(carol, fsm.KeyRecord{KID: "k", Source: "local-session"})
	f, _ := testFederationOver(t, &now, fx)
	peer := f.peers["did:web:a.example"]
	origin := originName(peer.DID)

	event := func(nick, sender, did string) exchange.Event {
		return exchange.Event{OriginSeq: 1, MsgID: ulid.Make().String(), Venue: "#c", Command: "PRIVMSG", SenderNick: nick, Sender: sender,
			SenderDID: did, Text: "hi", TimeMS: now.UnixMilli()}
	}
	tests := []struct {
		name       string
		ev         exchange.Event
		want       outcome
		wantSender string
	}{
		{"offline owner's DID", event("someone", "", alice), outcomeImpostor, ""},
		{"offline owner's nick, another DID", event("Alice", "", remote), outcomeImpostor, ""},
		{"offline owner's nick, no DID", event("alice", "", ""), outcomeImpostor, ""},
		{"a DID with a key registered here", event("carol", "", carol), outcomeImpostor, ""},
		{"a look-alike of the owner's nick (Cyrillic а)", event("\u0430lice", "", remote), outcomeImpostor, ""},
		{"a look-alike in capitals (Cyrillic І)", event("AL\u0406CE", "", remote), outcomeImpostor, ""},
		{"a look-alike with capital I for l", event("paypaI", "", remote), outcomeImpostor, ""},
		{"a remote user", event("bob", "bob!bobby@"+origin, remote), "", "bob!bobby@" + origin},
		{"a remote user claiming a local host", event("bob", "bob!bobby@palaver.local", remote), "", "bob!bobby@" + origin},
		{"a prefix of another nick", event("bob", "eve!e@x", remote), "", "bob!~remote@" + origin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, why := f.inboundMessage(peer, tt.ev)
			if why != tt.want {
				t.Fatalf("outcome %q, want %q", why, tt.want)
			}
			if m != nil && m.Sender != tt.wantSender {
				t.Errorf("sender %q, want %q", m.Sender, tt.wantSender)
			}
		})
	}

	presence := []Presence{
		{Kind: PresenceJoin, Channel: "#c", Nick: "ALICE", DID: remote},
		{Kind: PresenceJoin, Channel: "#c", Nick: "x", DID: alice},
		{Kind: PresenceNick, Nick: "bob", NewNick: "alice", DID: remote},
		{Kind: PresenceJoin, Channel: "#c", Nick: "\u0430lice", DID: remote},
		{Kind: PresenceNick, Nick: "bob", NewNick: "paypaI", DID: remote},
	}
	for _, p := range presence {
		if got, err := f.applyPresence(context.Background(), peer, p); err != nil || got != outcomeImpostor {
			t.Errorf("presence %+v: %q, %v; want %q", p, got, err, outcomeImpostor)
		}
	}

	venue := "dm:" + alice + "," + remote
	if got := f.inboundDM(venue, alice); got != outcomeImpostor {
		t.Errorf("a DM sent as the offline owner: %q, want %q", got, outcomeImpostor)
	}
	if got := f.inboundDM(venue, remote); got != "" {
		t.Errorf("a DM to the offline owner: %q, want accepted", got)
	}
}
