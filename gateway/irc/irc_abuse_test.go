package irc_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// TestIRCServerOwnedTagsStripped: a client cannot set the tags only a server sets (the origin of
// a federated message, reaction tallies, pin notices, ...); its own client tags still travel.
func TestIRCServerOwnedTagsStripped(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	sender, _ := guest(t, n, "forger", "message-tags")
	reader, _ := guest(t, n, "reader", "message-tags", "batch", "draft/chathistory")
	joinChannels(t, sender, "#owned")
	joinChannels(t, reader, "#owned")
	sendLines(t, sender, "@+freeq.at/origin=peer.example;+freeq.at/reactions=x;+freeq.at/pin=y;+freeq.at/actor-class=agent;+freeq.at/commit-verified=true;+freeq.at/streaming=1 PRIVMSG #owned :as a peer")
	m := expectFrom(t, reader, "forger", "PRIVMSG", "#owned", "as a peer")
	for _, tag := range []string{"+freeq.at/origin", "+freeq.at/reactions", "+freeq.at/pin", "+freeq.at/actor-class", "+freeq.at/commit-verified"} {
		if v, ok := m.Tags[tag]; ok {
			t.Errorf("a client set the server-owned tag %s=%q: %q", tag, v, m.String())
		}
	}
	if m.Tags["+freeq.at/streaming"] != "1" {
		t.Errorf("a client tag was dropped: %q", m.String())
	}
	// CHATHISTORY shows the stored message: it does not carry the tags either.
	sendLines(t, reader, "CHATHISTORY LATEST #owned * 10")
	_, body := batchBody(t, reader, "chathistory")
	found := false
	for _, h := range body {
		if h.Param(1) != "as a peer" {
			continue
		}
		found = true
		if _, ok := h.Tags["+freeq.at/origin"]; ok {
			t.Errorf("the stored message carries the origin tag: %q", h.String())
		}
	}
	if !found {
		t.Errorf("the message is not in history: %q", lines(body))
	}
}

// TestIRCNickLookalikes: nicks with invisible, bidirectional-control, control or compatibility
// characters are refused, and so is a nick that looks like a nick another identity owns, online
// or not; the owner may still take its own nick's lookalikes.
func TestIRCNickLookalikes(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	owner := newEd25519(t)
	c, _ := loginAs(t, n, owner, "victim")
	quit(t, n, c, "victim")
	g, _ := guest(t, n, "mallory")
	for _, nick := range []string{"victim\u200b", "vic\u202etim", "victim\u00a0", "\ufeffvictim", "vic\u0085tim", "ｖｉｃｔｉｍ"} {
		sendLines(t, g, "NICK "+nick)
		m := expect(t, g, "432")
		if !strings.Contains(m.Param(2), "not allowed") {
			t.Errorf("NICK %+q: 432 %q, want the reason", nick, m.Param(2))
		}
	}
	for _, nick := range []string{"vict\u0456m", "\u03bdictim"} {
		sendLines(t, g, "NICK "+nick)
		m := expect(t, g, "432")
		if !strings.Contains(m.Param(2), "too like victim") {
			t.Errorf("NICK %+q: 432 %q, want it named as too like victim", nick, m.Param(2))
		}
	}
	sendLines(t, g, "NICK bystander")
	expectFrom(t, g, "mallory", "NICK", "bystander")
	// The owner itself is not kept from a lookalike of its own nick.
	o, _ := loginAs(t, n, owner, "victim")
	sendLines(t, o, "NICK vict\u0456m")
	expectFrom(t, o, "victim", "NICK", "vict\u0456m")
}

// floodCounts counts the replies to c's burst: lines matching ok, and refusals matching refused.
func floodCounts(msgs []ircmsg.Message, ok, refused func(ircmsg.Message) bool) (oks, refusals int) {
	for _, m := range msgs {
		switch {
		case ok(m):
			oks++
		case refused(m):
			refusals++
		}
	}
	return oks, refusals
}

// refilled is how many tokens a bucket refilling one per every gains in elapsed, plus one for a
// refill that lands while the burst is read.
func refilled(elapsed, every time.Duration) int { return int(elapsed/every) + 1 }

// TestIRCFloodLimitsNickJoinAuthenticate: NICK, JOIN (per channel, JOIN 0 included) and
// AUTHENTICATE have their own limits, and a wrong channel key costs more than a right one.
func TestIRCFloodLimitsNickJoinAuthenticate(t *testing.T) {
	n := startNode(t, t.TempDir(), func(c *Config) { c.NoFloodLimits = false })

	t.Run("NICK", func(t *testing.T) {
		c, _ := guest(t, n, "nicker")
		start := time.Now()
		for i := range 15 {
			sendLines(t, c, fmt.Sprintf("NICK nicker%02d", i))
		}
		msgs := drain(t, c)
		changed, refused := floodCounts(msgs,
			func(m ircmsg.Message) bool { return m.Command == "NICK" },
			func(m ircmsg.Message) bool { return m.Command == "438" })
		// Registration took one of the 5 NICKs of the burst.
		if limit := 4 + refilled(time.Since(start), 5*time.Second); changed > limit || refused == 0 || changed+refused != 15 {
			t.Fatalf("15 NICKs at once: %d changed (want at most %d), %d refused with 438", changed, limit, refused)
		}
	})

	t.Run("JOIN counts each channel", func(t *testing.T) {
		c, _ := guest(t, n, "joiner")
		start := time.Now()
		var list []string
		for i := range 25 {
			list = append(list, fmt.Sprintf("#jl%02d", i))
		}
		sendLines(t, c, "JOIN "+strings.Join(list, ","))
		for i := range 6 {
			sendLines(t, c, fmt.Sprintf("JOIN #jx%d", i))
		}
		msgs := drain(t, c)
		joined, refused := floodCounts(msgs,
			func(m ircmsg.Message) bool { return m.Command == "JOIN" && strings.HasPrefix(m.Param(0), "#jx") },
			func(m ircmsg.Message) bool {
				return m.Command == "NOTICE" && strings.Contains(m.Param(1), "joining channels too fast")
			})
		if limit := refilled(time.Since(start), 500*time.Millisecond); joined > limit || refused == 0 {
			t.Fatalf("after a list of 25 channels, %d of 6 more JOINs went through (want at most %d), %d refused", joined, limit, refused)
		}
	})

	t.Run("JOIN 0 counts the channels it leaves", func(t *testing.T) {
		c, _ := guest(t, n, "leaver")
		start := time.Now()
		sendLines(t, c, "JOIN #l1,#l2,#l3,#l4,#l5,#l6,#l7,#l8,#l9,#l10,#l11,#l12,#l13,#l14")
		sendLines(t, c, "JOIN 0")
		msgs := drain(t, c)
		if time.Since(start) > 2*time.Second { // 6 tokens would have come back: nothing to show
			t.Skip("too slow a machine to show the JOIN 0 limit")
		}
		parted, refused := floodCounts(msgs,
			func(m ircmsg.Message) bool { return m.Command == "PART" },
			func(m ircmsg.Message) bool {
				return m.Command == "NOTICE" && strings.Contains(m.Param(1), "joining channels too fast")
			})
		if parted != 0 || refused != 1 {
			t.Fatalf("JOIN 0 of 14 channels with 6 tokens left: %d parts, %d refusals; want it refused", parted, refused)
		}
	})

	t.Run("a wrong key costs more than a right one", func(t *testing.T) {
		op, _ := guest(t, n, "keyop")
		joinChannels(t, op, "#locked")
		sendLines(t, op, "MODE #locked +k sesame")
		expectFrom(t, op, "keyop", "MODE", "#locked", "+k")
		right, _ := guest(t, n, "keyright")
		for range 10 {
			sendLines(t, right, "JOIN #locked sesame", "PART #locked")
		}
		msgs := drain(t, right)
		joined, _ := floodCounts(msgs,
			func(m ircmsg.Message) bool { return m.Command == "JOIN" && isFrom(m, "keyright") },
			func(ircmsg.Message) bool { return false })
		if joined != 10 {
			t.Fatalf("10 JOINs with the right key: %d joined, want 10", joined)
		}
		guesser, _ := guest(t, n, "keyguess")
		start := time.Now()
		for i := range 10 {
			sendLines(t, guesser, fmt.Sprintf("JOIN #locked guess%d", i))
		}
		msgs = drain(t, guesser)
		wrong, refused := floodCounts(msgs,
			func(m ircmsg.Message) bool { return m.Command == "475" },
			func(m ircmsg.Message) bool {
				return m.Command == "NOTICE" && strings.Contains(m.Param(1), "joining channels too fast")
			})
		// 20 tokens, 1 + 5 per wrong key: the fourth guess spends the burst.
		if limit := 4 + refilled(time.Since(start), 500*time.Millisecond)/6; wrong > limit || wrong+refused != 10 {
			t.Fatalf("10 guesses: %d answered 475 (want at most %d), %d refused", wrong, limit, refused)
		}
	})

	t.Run("AUTHENTICATE", func(t *testing.T) {
		c := dial(t, n)
		start := time.Now()
		for range 30 {
			sendLines(t, c, "AUTHENTICATE *")
		}
		sendLines(t, c, "NICK authflood", "USER a 0 * :a")
		msgs := readUntil(t, c, "001", func(m ircmsg.Message) bool { return m.Command == "001" })
		answered, refused := floodCounts(msgs,
			func(m ircmsg.Message) bool {
				return m.Command == "906" || (m.Command == "904" && !strings.Contains(m.Param(1), "slow down"))
			},
			func(m ircmsg.Message) bool { return m.Command == "904" && strings.Contains(m.Param(1), "slow down") })
		if limit := 12 + refilled(time.Since(start), time.Second); answered > limit || answered+refused != 30 {
			t.Fatalf("30 AUTHENTICATE lines: %d answered (want at most %d), %d refused", answered, limit, refused)
		}
	})
}

// TestIRCOperFailureLimits: a connection gets three failed OPERs and its address five; after
// that even the right password is refused, and passwords are checked against bcrypt hashes.
func TestIRCOperFailureLimits(t *testing.T) {
	_, n := operNode(t, "hunter2")

	first, _ := guest(t, n, "guesser1")
	for i := range 3 {
		sendLines(t, first, fmt.Sprintf("OPER admin wrong%d", i))
		expectParams(t, first, "464", "guesser1", "Password incorrect")
	}
	sendLines(t, first, "OPER admin hunter2")
	if m := expect(t, first, "464"); !strings.Contains(m.Param(1), "on this connection") {
		t.Fatalf("a fourth OPER on the connection: %q", m.String())
	}

	second, _ := guest(t, n, "guesser2")
	for i := range 2 { // the address's fourth and fifth failures
		sendLines(t, second, fmt.Sprintf("OPER admin again%d", i))
		expectParams(t, second, "464", "guesser2", "Password incorrect")
	}
	third, _ := guest(t, n, "guesser3")
	sendLines(t, third, "OPER admin hunter2")
	if m := expect(t, third, "464"); !strings.Contains(m.Param(1), "from your address") {
		t.Fatalf("the right password after the address's five failures: %q", m.String())
	}
}

// TestIRCOperWithHash: the right password against a bcrypt hash makes an operator.
func TestIRCOperWithHash(t *testing.T) {
	hash, n := operNode(t, "hunter2")
	c, _ := guest(t, n, "rightful")
	sendLines(t, c, "OPER admin "+string(hash)) // the hash itself is not the password
	expectParams(t, c, "464", "rightful", "Password incorrect")
	sendLines(t, c, "OPER admin hunter2")
	expectParams(t, c, "381", "rightful", "You are now an IRC operator")
}

// operNode starts a node whose operator "admin" has password, configured as a bcrypt hash.
func operNode(t *testing.T, password string) (hash []byte, n *Node) {
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return hash, startNode(t, t.TempDir(), func(c *Config) { c.Opers = map[string]string{"admin": string(hash)} })
}
