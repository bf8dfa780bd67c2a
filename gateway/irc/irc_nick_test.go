package irc_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestIRCNickOwnership: a DID that registers with a nick owns it; guests and other DIDs asking for it
// later get another nick with the reference NOTICE (freeq-reference §4.1).
func TestIRCNickOwnership(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	owner := newEd25519(t)
	c, _ := loginAs(t, n, owner, "ownednick")
	quit(t, n, c, "ownednick")

	t.Run("a guest is renamed Guest<n>", func(t *testing.T) {
		g := dial(t, n)
		w, err := g.Register(testCtx(t), "ownednick")
		if err != nil {
			t.Fatal(err)
		}
		got := w.Param(0)
		var num int
		if _, err := fmt.Sscanf(got, "Guest%d", &num); err != nil || fmt.Sprintf("Guest%d", num) != got || num < 0 || num > 99999 {
			t.Fatalf("guest got nick %q, want Guest<0-99999>", got)
		}
		notice := expectSeenParams(t, g, "NOTICE")
		want := fmt.Sprintf("Nick ownednick is registered — renamed to %s. Authenticate to reclaim.", got)
		if notice.Param(0) != "*" || notice.Param(1) != want {
			t.Fatalf("NOTICE = %q, want NOTICE * :%s", notice.String(), want)
		}
	})

	t.Run("another DID gets its derived nick", func(t *testing.T) {
		other := newEd25519(t)
		o, _ := loginAs(t, n, other, "ownednick")
		w := expectSeen(t, o, "001")
		got := w.Param(0)
		if got == "ownednick" || !strings.HasPrefix(got, "ownednick-") {
			t.Fatalf("other DID got nick %q, want a derived ownednick-<suffix>", got)
		}
		notice := expectSeenParams(t, o, "NOTICE", "registered to another identity")
		want := fmt.Sprintf("ownednick is registered to another identity. You are %s (tied to your account).", got)
		if notice.Param(0) != "*" || notice.Param(1) != want {
			t.Fatalf("NOTICE = %q, want NOTICE * :%s", notice.String(), want)
		}
		// The derived nick is stable for that DID.
		quit(t, n, o, got)
		o2, _ := loginAs(t, n, other, "ownednick")
		if again := expectSeen(t, o2, "001").Param(0); again != got {
			t.Fatalf("second login got %q, first %q", again, got)
		}
	})

	t.Run("a guest cannot change to an owned nick", func(t *testing.T) {
		g, _ := guest(t, n, "nickchanger")
		sendLines(t, g, "NICK ownednick")
		expect(t, g, "433", "ownednick")
		sendLines(t, g, "NICK OwnedNick")
		expect(t, g, "433", "OwnedNick")
		sendLines(t, g, "WHOIS nickchanger")
		expect(t, g, "311", "nickchanger")
	})

	t.Run("the owner reclaims it", func(t *testing.T) {
		o, _ := loginAs(t, n, owner, "ownednick")
		if got := expectSeen(t, o, "001").Param(0); got != "ownednick" {
			t.Fatalf("owner got %q", got)
		}
	})
}

// TestIRCNickLookalikesEveryNode: on any node of a cluster, a nick is refused when it looks like
// a nick in use anywhere, a guest's included (Cyrillic і for i), or like an owned nick once the
// skeleton sees the nick as typed (capital I for l); the holder's own session may take one.
func TestIRCNickLookalikesEveryNode(t *testing.T) {
	nodes := startCluster(t)
	owner := newEd25519(t)
	o, _ := loginAs(t, nodes[0], owner, "paypal")
	quit(t, nodes[0], o, "paypal")
	victim, _ := guest(t, nodes[0], "victim2")
	for i, n := range nodes {
		g, _ := guest(t, n, fmt.Sprintf("bystander%d", i))
		eventually(t, "victim2 online as node "+fmt.Sprint(i)+" sees it", func() bool {
			sendLines(t, g, "ISON victim2")
			return strings.Contains(expect(t, g, "303").Param(1), "victim2")
		})
		for _, tc := range []struct{ nick, like string }{
			{"vict\u0456m2", "too like victim2, which is in use"},
			{"VICT\u0406M2", "too like victim2, which is in use"},
			{"paypaI", "too like paypal, which is registered to another identity"},
			{"PAYPAI", "too like paypal, which is registered to another identity"},
		} {
			sendLines(t, g, "NICK "+tc.nick)
			if m := expect(t, g, "432"); !strings.Contains(m.Param(2), tc.like) {
				t.Errorf("node %d: NICK %+q: 432 %q, want %q", i, tc.nick, m.Param(2), tc.like)
			}
		}
	}
	// The guest itself may change to a look-alike of its own nick.
	sendLines(t, victim, "NICK vict\u0456m2")
	expectFrom(t, victim, "victim2", "NICK", "vict\u0456m2")
	// Every node follows the rename and the end of the session: the new nick's look-alikes are
	// taken, then free once the session has ended.
	last := len(nodes) - 1
	g, _ := guest(t, nodes[last], "bystander")
	eventually(t, "the rename seen on the last node", func() bool {
		sendLines(t, g, "ISON vict\u0456m2")
		return strings.Contains(expect(t, g, "303").Param(1), "vict\u0456m2")
	})
	sendLines(t, g, "NICK victim2")
	if m := expect(t, g, "432"); !strings.Contains(m.Param(2), "too like vict\u0456m2, which is in use") {
		t.Errorf("NICK victim2 after the rename: 432 %q", m.Param(2))
	}
	quit(t, nodes[0], victim, "vict\u0456m2")
	eventually(t, "the end of the session seen on the last node", func() bool {
		sendLines(t, g, "ISON vict\u0456m2")
		return expect(t, g, "303").Param(1) == ""
	})
	sendLines(t, g, "NICK victim2")
	expectFrom(t, g, "bystander", "NICK", "victim2")
}
