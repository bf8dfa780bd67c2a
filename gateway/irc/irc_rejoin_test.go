package irc_test

import (
	"encoding/base64"
	"slices"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// withRejoin turns rejoining at login on.
func withRejoin(c *Config) { c.Rejoin = true }

// joinsIn lists the channels of the JOIN lines of nick among msgs, in order.
func joinsIn(msgs []ircmsg.Message, nick string) []string {
	var out []string
	for _, m := range msgs {
		if m.Command == "JOIN" && isFrom(m, nick) {
			out = append(out, m.Param(0))
		}
	}
	return out
}

// burst logs in on n as the signer's DID with nick and returns every line up to the end of the
// connection burst (what the server queued before a PING after 001).
func burst(t *testing.T, n *Node, s ircclient.Signer, nick string, caps ...string) (*ircclient.Client, []ircmsg.Message) {
	t.Helper()
	c, res := loginAs(t, n, s, nick, caps...)
	return c, append(res.Lines, drain(t, c)...)
}

// plainBurst logs in on n with SASL PLAIN (login, password) before registering as nick, and
// returns every line up to the end of the connection burst.
func plainBurst(t *testing.T, n *Node, login, password, nick string) (*ircclient.Client, []ircmsg.Message) {
	t.Helper()
	c := dial(t, n)
	sendLines(t, c, "CAP LS 302", "CAP REQ :sasl draft/read-marker")
	expect(t, c, "CAP", "ACK")
	lines := plainLogin(t, c, "", login, password)
	if loggedInAs(lines) == "" {
		t.Fatalf("PLAIN login: %v", lastSeen(c))
	}
	finishRegistration(t, c, nick)
	return c, append(c.Seen(), drain(t, c)...)
}

// TestIRCRejoin: with --rejoin, an account's next login joins the channels its sessions were in
// when they ended, as a JOIN would, with the read marker; a part or kick forgets a channel; the
// channel's rules as of the login apply; other connected sessions' channels count; without
// --rejoin nothing is joined.
func TestIRCRejoin(t *testing.T) {
	n := startNode(t, t.TempDir(), func(c *Config) {
		withRejoin(c)
		c.AccountRegistration.Enabled, c.AccountRegistration.PerAddressPerHour = true, 10
	})
	off := startNode(t, t.TempDir(), nil)
	bob, _ := login(t, n, "bob")

	t.Run("the channels, topic, names and read marker come back after the welcome", func(t *testing.T) {
		s := newEd25519(t)
		c, res := loginAs(t, n, s, "alice", "draft/read-marker")
		joinChannels(t, c, "#r1", "#r2")
		sendLines(t, c, "TOPIC #r1 :kept topic", "MARKREAD #r1 timestamp=2021-05-20T08:30:00.000Z")
		expect(t, c, "MARKREAD", "#r1", "timestamp=2021-05-20T08:30:00.000Z")
		quit(t, n, c, "alice")

		c, lines := burst(t, n, s, "alice", "draft/read-marker")
		if got := joinsIn(lines, "alice"); !slices.Equal(got, []string{"#r1", "#r2"}) {
			t.Fatalf("rejoined %q, want #r1 #r2\n%v", got, lines)
		}
		welcome := slices.IndexFunc(lines, func(m ircmsg.Message) bool { return m.Command == "001" })
		join := slices.IndexFunc(lines, func(m ircmsg.Message) bool { return m.Command == "JOIN" })
		if welcome < 0 || join < welcome {
			t.Errorf("JOIN at %d, welcome at %d", join, welcome)
		}
		for _, want := range [][]string{{"332", "#r1", "kept topic"}, {"MARKREAD", "#r1", "timestamp=2021-05-20T08:30:00.000Z"},
			{"366", "#r1"}, {"366", "#r2"}, {"MARKREAD", "#r2", "*"}} {
			if _, ok := findMsg(lines, want[0], want[1:]...); !ok {
				t.Errorf("no %q in the burst", want)
			}
		}
		// A JOIN the client sends itself for a rejoined channel changes nothing.
		sendLines(t, c, "JOIN #r1,#r2")
		if got := joinsIn(drain(t, c), "alice"); len(got) != 0 {
			t.Errorf("a second JOIN answered %q", got)
		}
		if res.DID == "" {
			t.Fatal("no DID")
		}
		quit(t, n, c, "alice")
	})

	t.Run("a part or a kick forgets the channel", func(t *testing.T) {
		s := newEd25519(t)
		c, _ := loginAs(t, n, s, "carol")
		joinChannels(t, bob, "#k")
		joinChannels(t, c, "#p", "#k", "#stay")
		sendLines(t, c, "PART #p")
		expect(t, c, "PART", "#p")
		sendLines(t, bob, "KICK #k carol :out")
		expect(t, c, "KICK", "#k", "carol")
		quit(t, n, c, "carol")
		c, lines := burst(t, n, s, "carol")
		if got := joinsIn(lines, "carol"); !slices.Equal(got, []string{"#stay"}) {
			t.Fatalf("rejoined %q, want #stay", got)
		}
		quit(t, n, c, "carol")
	})

	t.Run("the channel's rules as of the login apply, with their numerics", func(t *testing.T) {
		s := newEd25519(t)
		c, res := loginAs(t, n, s, "dave")
		rules := []struct{ channel, mode, numeric string }{
			{"#banned", "+b " + res.DID, "474"},
			{"#keyed", "+k sesame", "475"},
			{"#invite", "+i", "473"},
			{"#full", "+l 1", "471"},
		}
		for _, r := range rules {
			joinChannels(t, bob, r.channel)
		}
		joinChannels(t, c, "#banned", "#keyed", "#invite", "#full", "#open")
		quit(t, n, c, "dave")
		for _, r := range rules {
			sendLines(t, bob, "MODE "+r.channel+" "+r.mode)
			expect(t, bob, "MODE", r.channel)
		}
		c, lines := burst(t, n, s, "dave")
		if got := joinsIn(lines, "dave"); !slices.Equal(got, []string{"#open"}) {
			t.Errorf("rejoined %q, want #open", got)
		}
		for _, r := range rules {
			if _, ok := findMsg(lines, r.numeric, r.channel); !ok {
				t.Errorf("no %s for %s in %v", r.numeric, r.channel, lines)
			}
		}
		quit(t, n, c, "dave")
	})

	t.Run("a second session joins the channels of the first", func(t *testing.T) {
		s := newEd25519(t)
		first, _ := loginAs(t, n, s, "erin")
		joinChannels(t, first, "#both")
		second, lines := burst(t, n, s, "erin2")
		if got := joinsIn(lines, "erin2"); !slices.Equal(got, []string{"#both"}) {
			t.Errorf("the second session joined %q, want #both", got)
		}
		second.Close()
		first.Close()
	})

	t.Run("a login after registering (SASL PLAIN) rejoins too", func(t *testing.T) {
		s := newEd25519(t)
		c, res := loginAs(t, n, s, "frank")
		pw := mintPassword(t, c, "irc")
		joinChannels(t, c, "#pw")
		quit(t, n, c, "frank")
		g, _ := guest(t, n, "frankie", "sasl")
		sendLines(t, g, "AUTHENTICATE PLAIN")
		expectParams(t, g, "AUTHENTICATE", "+")
		sendLines(t, g, "AUTHENTICATE "+plainPayload(res.DID, pw))
		expect(t, g, "903")
		expect(t, g, "JOIN", "#pw")
		quit(t, n, g, "frankie")
		c, lines := plainBurst(t, n, res.DID, pw, "frank")
		if got := joinsIn(lines, "frank"); !slices.Equal(got, []string{"#pw"}) {
			t.Errorf("PLAIN before registering rejoined %q, want #pw", got)
		}
		c.Close()
	})

	t.Run("an account created by REGISTER is followed from its first session", func(t *testing.T) {
		c, _ := guest(t, n, "henry", "draft/account-registration")
		if m := registerReply(t, c, "REGISTER * * shivarampassphrase"); m.Param(0) != "SUCCESS" {
			t.Fatalf("REGISTER: %q", m.String())
		}
		joinChannels(t, c, "#new")
		quit(t, n, c, "henry")
		c, lines := plainBurst(t, n, "henry", "shivarampassphrase", "henry")
		if got := joinsIn(lines, "henry"); !slices.Equal(got, []string{"#new"}) {
			t.Errorf("rejoined %q, want #new", got)
		}
		c.Close()
	})

	t.Run("without --rejoin nothing is joined", func(t *testing.T) {
		s := newEd25519(t)
		c, _ := loginAs(t, off, s, "gina")
		joinChannels(t, c, "#off")
		quit(t, off, c, "gina")
		c, lines := burst(t, off, s, "gina")
		if got := joinsIn(lines, "gina"); len(got) != 0 {
			t.Errorf("rejoined %q without --rejoin", got)
		}
		c.Close()
	})
}

// TestIRCRejoinCluster: the channels remembered when an account's session ends on one node are
// rejoined when it logs in on another, with SASL PLAIN, the read marker included.
func TestIRCRejoinCluster(t *testing.T) {
	nodes := startNamedCluster(t, "test", withRejoin)
	s := newEd25519(t)
	c, res := loginAs(t, nodes[0], s, "alice", "draft/read-marker")
	pw := mintPassword(t, c, "irc")
	joinChannels(t, c, "#c1", "#c2")
	sendLines(t, c, "MARKREAD #c2 timestamp=2024-01-02T03:04:05.000Z")
	expect(t, c, "MARKREAD", "#c2", "timestamp=2024-01-02T03:04:05.000Z")
	quit(t, nodes[0], c, "alice")
	sessionGone(t, nodes[1], "alice")

	c, lines := plainBurst(t, nodes[1], res.DID, pw, "alice")
	if got := joinsIn(lines, "alice"); !slices.Equal(got, []string{"#c1", "#c2"}) {
		t.Fatalf("rejoined on node b %q, want #c1 #c2\n%v", got, lines)
	}
	if _, ok := findMsg(lines, "MARKREAD", "#c2", "timestamp=2024-01-02T03:04:05.000Z"); !ok {
		t.Errorf("no MARKREAD #c2 in %v", lines)
	}
	// The account's session on node b counts for a login on node c.
	d, lines := burst(t, nodes[2], s, "alice2")
	if got := joinsIn(lines, "alice2"); !slices.Equal(got, []string{"#c1", "#c2"}) {
		t.Errorf("rejoined on node c %q, want #c1 #c2", got)
	}
	d.Close()
	c.Close()
}

// plainPayload is the AUTHENTICATE payload of a PLAIN login.
func plainPayload(authcid, password string) string {
	return base64.StdEncoding.EncodeToString([]byte("\x00" + authcid + "\x00" + password))
}
