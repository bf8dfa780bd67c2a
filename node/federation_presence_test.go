package node

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/palaver-chat/palaver/federation/peering"
)

// TestRemotePresence: a peer's members of a linked channel appear in JOIN, NAMES, WHO and WHOIS;
// a member naming a local user or banned here is refused; this server's own joins are sent with a
// snapshot; when the link drops the peer's members leave, and the next envelope asks for them.
func TestRemotePresence(t *testing.T) {
	presence := make(chan peering.Presence, 64)
	kicks := make(chan peering.Change, 16)
	asked := make(chan bool, 64)
	var down atomic.Bool
	home, beta := scriptedHome(t, func(b traffic) (int, any) {
		if down.Load() {
			return http.StatusServiceUnavailable, map[string]string{"error": "down"}
		}
		for _, p := range b.Presence {
			presence <- p
		}
		ack := peering.Ack{OK: true}
		for _, c := range b.Changes {
			kicks <- c
			if c.Target == "nobody" {
				ack.Refused = map[string]string{c.RequestID: "no-target"}
			}
		}
		select {
		case asked <- b.WantPresence:
		default:
		}
		return http.StatusOK, ack
	})
	to := "did:web:beta.test"
	post := func(ps ...peering.Presence) {
		t.Helper()
		b := home.batch(to)
		b.Presence = ps
		if st := home.post(beta, home.key, b); st != http.StatusOK {
			t.Fatalf("envelope: status %d", st)
		}
	}
	waitPresence := func(match func(peering.Presence) bool) peering.Presence {
		t.Helper()
		for {
			select {
			case p := <-presence:
				if match(p) {
					return p
				}
			case <-testCtx(t).Done():
				t.Fatal("the expected presence did not reach the home")
			}
		}
	}

	bob, res := login(t, beta, "bob", "extended-join")
	bob.Send("JOIN #fed")
	expect(t, bob, "366", "#fed")
	waitPresence(func(p peering.Presence) bool {
		return p.Kind == peering.PresenceJoin && p.Channel == "#fed" && p.Nick == "bob" && p.DID == res.DID
	})

	// The home's members: carol joins; one claiming bob's DID, one using bob's nick are refused.
	post(peering.Presence{Kind: peering.PresenceJoin, Channel: "#fed", Nick: "fakebob", User: "u", DID: res.DID},
		peering.Presence{Kind: peering.PresenceJoin, Channel: "#fed", Nick: "BOB", User: "u"},
		peering.Presence{Kind: peering.PresenceJoin, Channel: "#fed", Nick: "carol", User: "c", DID: "did:web:carol.a-home.test"})
	if got := expect(t, bob, "JOIN", "#fed"); !strings.HasPrefix(got.Source, "carol!c@a-home.test") || got.Params[1] != "did:web:carol.a-home.test" {
		t.Fatalf("remote join rendered as %s", got.String())
	}
	bob.Send("NAMES #fed")
	if names := expect(t, bob, "353", "#fed"); !strings.Contains(names.Params[3], "carol") || strings.Contains(strings.ToLower(names.Params[3]), "fakebob") {
		t.Fatalf("NAMES = %s", names.String())
	}
	bob.Send("WHO #fed")
	expect(t, bob, "352", "#fed", "c", "a-home.test", "carol")
	bob.Send("WHOIS carol")
	expect(t, bob, "312", "carol", "a-home.test")
	expect(t, bob, "330", "carol", "did:web:carol.a-home.test")

	// Nick change and part render; a member banned here by DID cannot join.
	post(peering.Presence{Kind: peering.PresenceNick, Nick: "carol", NewNick: "carol2"})
	expect(t, bob, "NICK", "carol2")
	bob.Send("MODE #fed +o did:web:op.a-home.test") // so the home's ban applies here
	expect(t, bob, "MODE", "#fed", "+o")
	b := home.batch(to)
	b.Changes = []peering.Change{{Kind: peering.ChangeMode, Channel: "#fed", Actor: "op!u@a-home.test", ActorDID: "did:web:op.a-home.test",
		Modes: []peering.ModeChange{{Add: true, Mode: "b", Arg: "did:web:dave.a-home.test"}}}}
	if st := home.post(beta, home.key, b); st != http.StatusOK {
		t.Fatalf("envelope: status %d", st)
	}
	expect(t, bob, "MODE", "#fed", "+b")
	post(peering.Presence{Kind: peering.PresenceJoin, Channel: "#fed", Nick: "dave", User: "d", DID: "did:web:dave.a-home.test"},
		peering.Presence{Kind: peering.PresenceJoin, Channel: "#fed", Nick: "erin", User: "e"})
	if got := expect(t, bob, "JOIN", "#fed"); !strings.HasPrefix(got.Source, "erin!") {
		t.Fatalf("a banned DID joined: %s", got.String())
	}

	// The link drops: the home's members leave; when it is back, beta asks for them.
	down.Store(true)
	expect(t, bob, "QUIT", "lost")
	bob.Send("NAMES #fed")
	if names := expect(t, bob, "353", "#fed"); strings.Contains(names.Params[3], "carol2") || strings.Contains(names.Params[3], "erin") {
		t.Fatalf("NAMES after the link dropped = %s", names.String())
	}
	for len(asked) > 0 {
		<-asked
	}
	down.Store(false)
	for want := false; !want; {
		select {
		case want = <-asked:
		case <-testCtx(t).Done():
			t.Fatal("beta did not ask for the home's members after the link came back")
		}
	}

	// Kicks and invites go to the target's server. bob kicks a member of the home: sent there.
	post(peering.Presence{Kind: peering.PresenceMembers, Channel: "#fed", Members: []peering.PresenceMember{{Nick: "erin", User: "e"}, {Nick: "nobody"}}})
	expect(t, bob, "JOIN", "#fed")
	bob.Send("KICK #fed erin :out")
	if c := <-kicks; c.Kind != peering.ChangeKick || c.Target != "erin" || c.Reason != "out" || c.ActorDID != res.DID {
		t.Fatalf("kick sent as %+v", c)
	}
	bob.Send("KICK #fed nobody")
	<-kicks
	expect(t, bob, "FAIL", "KICK", "REFUSED", "no-target")
	// The home's kicks of zed: by a stranger refused; by its op (an op here) applied; the
	// founder cannot be kicked from elsewhere.
	zed, _ := guest(t, beta, "zed")
	zed.Send("JOIN #fed")
	expect(t, zed, "366", "#fed")
	b = home.batch(to)
	b.Changes = []peering.Change{
		{Kind: peering.ChangeKick, Channel: "#fed", Actor: "nobody!u@a-home.test", ActorDID: "did:web:nobody.a-home.test", Target: "zed", Reason: "no"},
		{Kind: peering.ChangeKick, Channel: "#fed", Actor: "op!u@a-home.test", ActorDID: "did:web:op.a-home.test", Target: "bob", Reason: "founder"},
		{Kind: peering.ChangeKick, Channel: "#fed", Actor: "op!u@a-home.test", ActorDID: "did:web:op.a-home.test", Target: "zed", Reason: "yes"},
	}
	if st := home.post(beta, home.key, b); st != http.StatusOK {
		t.Fatalf("envelope: status %d", st)
	}
	if got := expect(t, bob, "KICK", "#fed"); !strings.HasPrefix(got.Source, "op!") || got.Params[1] != "zed" || got.Params[2] != "yes" {
		t.Fatalf("kick rendered as %s", got.String())
	}
	b = home.batch(to)
	b.Changes = []peering.Change{{Kind: peering.ChangeInvite, Channel: "#fed", Actor: "op!u@a-home.test", ActorDID: "did:web:op.a-home.test", Target: "zed"}}
	if st := home.post(beta, home.key, b); st != http.StatusOK {
		t.Fatalf("envelope: status %d", st)
	}
	if got := expect(t, zed, "INVITE", "zed", "#fed"); !strings.HasPrefix(got.Source, "op!") {
		t.Fatalf("invite rendered as %s", got.String())
	}
}
