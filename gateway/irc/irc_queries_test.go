package irc_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

func TestIRCQueries(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	asker, _ := guest(t, n, "asker")
	target, res := login(t, n, "queried")
	joinChannels(t, target, "#qpublic")
	joinChannels(t, target, "#qsecret")
	sendLines(t, target, "MODE #qsecret +i", "AWAY :busy")
	expect(t, target, "306")

	t.Run("WHOIS", func(t *testing.T) {
		sendLines(t, asker, "WHOIS queried")
		msgs := readUntil(t, asker, "318", func(m ircmsg.Message) bool { return m.Command == "318" })
		want := map[string][]string{
			"311": {"asker", "queried", "queried", strings.TrimPrefix(res.DID, "did:key:")[:8] + ".key.palaver", "*", "queried"},
			"312": {"asker", "queried", "palaver.test"},
			"319": {"asker", "queried", "@#qpublic"},
			"301": {"asker", "queried", "busy"},
			"330": {"asker", "queried", res.DID, "is logged in as"},
			"318": {"asker", "queried", "End of /WHOIS list"},
		}
		for code, params := range want {
			m, ok := findMsg(msgs, code)
			if !ok {
				t.Fatalf("WHOIS lacks %s: %q", code, commandsOf(msgs))
			}
			for i, p := range params {
				if !strings.HasPrefix(m.Param(i), p) {
					t.Fatalf("%s = %q, want param %d to start with %q", code, m.String(), i, p)
				}
			}
		}
		if m, _ := findMsg(msgs, "319"); strings.Contains(m.Param(2), "#qsecret") {
			t.Fatalf("WHOIS shows a restricted channel to a non-member: %q", m.String())
		}
		// A member sees both.
		sendLines(t, target, "WHOIS queried")
		expect(t, target, "319", "#qpublic", "#qsecret")

		sendLines(t, asker, "WHOIS nosuchnick")
		expectParams(t, asker, "401", "asker", "nosuchnick", "No such nick/channel")
		expectParams(t, asker, "318", "asker", "nosuchnick", "End of /WHOIS list")
	})

	t.Run("WHO on a channel and on a nick", func(t *testing.T) {
		joinChannels(t, asker, "#qpublic")
		sendLines(t, asker, "WHO #qpublic")
		msgs := readUntil(t, asker, "315", func(m ircmsg.Message) bool { return m.Command == "315" })
		rows := map[string]ircmsg.Message{}
		for _, m := range msgs {
			if m.Command == "352" {
				rows[m.Param(5)] = m
			}
		}
		q, ok := rows["queried"]
		if !ok || len(rows) != 2 {
			t.Fatalf("WHO rows %v", commandsOf(msgs))
		}
		// 352 <me> <channel> <user> <host> <server> <nick> <flags> :<hops> <realname>
		if q.Param(1) != "#qpublic" || q.Param(2) != "queried" || !strings.HasSuffix(q.Param(3), ".key.palaver") ||
			q.Param(4) != "palaver.test" || q.Param(6) != "G@" || q.Param(7) != "0 queried" {
			t.Fatalf("352 = %q", q.String())
		}
		if a := rows["asker"]; a.Param(6) != "H" {
			t.Fatalf("352 for asker = %q", a.String())
		}
		expectSeenParams(t, asker, "315", "#qpublic", "End of /WHO list")
		sendLines(t, asker, "WHO queried")
		m := expect(t, asker, "352", "queried")
		if m.Param(1) != "*" {
			t.Fatalf("WHO nick = %q", m.String())
		}
		expectParams(t, asker, "315", "asker", "queried", "End of /WHO list")
	})

	t.Run("USERHOST and ISON", func(t *testing.T) {
		sendLines(t, asker, "USERHOST queried asker nobody")
		m := expect(t, asker, "302")
		got := strings.Fields(m.Param(1))
		if len(got) != 2 || !strings.HasPrefix(got[0], "queried=-queried@") || !strings.HasSuffix(got[0], ".key.palaver") || got[1] != "asker=+asker@guest.palaver" {
			t.Fatalf("302 = %q", m.String())
		}
		sendLines(t, asker, "ISON queried nobody ASKER")
		expectParams(t, asker, "303", "asker", "queried asker")
	})

	t.Run("LUSERS, VERSION, TIME and MOTD", func(t *testing.T) {
		sendLines(t, asker, "LUSERS")
		msgs := readUntil(t, asker, "266", func(m ircmsg.Message) bool { return m.Command == "266" })
		if got := strings.Join(commandsOf(msgs), " "); !strings.HasSuffix(got, "251 252 254 255 265 266") {
			t.Fatalf("LUSERS = %q", got)
		}
		m, _ := findMsg(msgs, "251")
		if !strings.Contains(m.Param(1), "There are 2 users") {
			t.Fatalf("251 = %q", m.String())
		}

		sendLines(t, asker, "VERSION")
		v := expect(t, asker, "351")
		if !strings.HasPrefix(v.Param(1), "palaver-") || v.Param(2) != "palaver.test" {
			t.Fatalf("351 = %q", v.String())
		}
		expect(t, asker, "005", "CHATHISTORY=500")

		sendLines(t, asker, "TIME")
		tm := expect(t, asker, "391")
		at, err := time.Parse(time.RFC1123, tm.Param(2))
		if tm.Param(1) != "palaver.test" || err != nil || time.Since(at) > time.Minute || time.Until(at) > time.Minute {
			t.Fatalf("391 = %q (%v)", tm.String(), err)
		}

		sendLines(t, asker, "MOTD")
		expectParams(t, asker, "422", "asker", "MOTD File is missing") // no --motd: no MOTD
	})
}

func TestIRCOperators(t *testing.T) {
	operKey := newEd25519(t)
	n := startNode(t, t.TempDir(), func(c *Config) {
		c.Opers = map[string]string{"admin": "hunter2"}
		c.OperDIDs = []string{operKey.DID()}
	})

	t.Run("OPER with the configured password", func(t *testing.T) {
		c, _ := guest(t, n, "wouldbeoper")
		sendLines(t, c, "OPER admin wrong")
		expectParams(t, c, "464", "wouldbeoper", "Password incorrect")
		sendLines(t, c, "OPER nobody hunter2")
		expect(t, c, "464")
		sendLines(t, c, "MODE wouldbeoper")
		expectParams(t, c, "221", "wouldbeoper", "+")
		sendLines(t, c, "OPER admin hunter2")
		expectParams(t, c, "381", "wouldbeoper", "You are now an IRC operator")
		sendLines(t, c, "MODE wouldbeoper")
		expectParams(t, c, "221", "wouldbeoper", "+o")
	})

	t.Run("a configured DID is opered when it authenticates", func(t *testing.T) {
		c, _ := loginAs(t, n, operKey, "autooper")
		var mode, logged int = -1, -1
		for i, m := range c.Seen() {
			switch {
			case m.Command == "MODE" && strings.Join(m.Params, " ") == "autooper +o" && mode < 0:
				mode = i
			case m.Command == "900":
				logged = i
			}
		}
		if mode < 0 || logged < 0 || mode > logged {
			t.Fatalf("want MODE autooper +o before 900: %q", lastSeen(c))
		}
		sendLines(t, c, "WHOIS autooper")
		expectParams(t, c, "313", "autooper", "autooper", "is an IRC operator")
	})

	t.Run("a server operator may change modes where it is not opped", func(t *testing.T) {
		owner, _ := guest(t, n, "chanowner")
		chanOp(t, owner, "#opered")
		oper, _ := guest(t, n, "visitingoper")
		sendLines(t, oper, "OPER admin hunter2")
		expect(t, oper, "381")
		// Not a member at all.
		sendLines(t, oper, "MODE #opered +m")
		expectFrom(t, owner, "visitingoper", "MODE", "#opered", "+m")
		joinChannels(t, oper, "#opered")
		sendLines(t, oper, "MODE #opered +o visitingoper")
		expectFrom(t, owner, "visitingoper", "MODE", "#opered", "+o", "visitingoper")
		sendLines(t, oper, "KICK #opered chanowner :oper power")
		expectFrom(t, owner, "visitingoper", "KICK", "#opered", "chanowner")
		sendLines(t, oper, "LUSERS")
		m := expect(t, oper, "252")
		if count, err := strconv.Atoi(m.Param(1)); err != nil || count < 1 {
			t.Fatalf("252 = %q", m.String())
		}
	})
}

// TestIRCUserModeInvisible follows user mode +i (RFC 2812 3.1.5, modern IRC): MODE nick +i makes
// the user invisible: a WHO by mask, or of a channel one is not in, lists it only to someone who
// shares a channel with it (a WHO of its exact nick still does); 221 shows it; -i undoes it; an
// unknown user mode letter is 501 and changes nothing.
func TestIRCUserModeInvisible(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	evan, _ := guest(t, n, "invevan")
	other, _ := guest(t, n, "invother")
	who := func(c *ircclient.Client, mask string) []string {
		t.Helper()
		sendLines(t, c, "WHO "+mask)
		var nicks []string
		for _, m := range readUntil(t, c, "315", func(m ircmsg.Message) bool { return m.Command == "315" }) {
			if m.Command == "352" {
				nicks = append(nicks, m.Param(5))
			}
		}
		return nicks
	}
	joinChannels(t, evan, "#invchan")
	sendLines(t, evan, "MODE invevan +i")
	expectParams(t, evan, "MODE", "invevan", "+i")
	sendLines(t, evan, "MODE invevan")
	expectParams(t, evan, "221", "invevan", "+i")
	if got := who(other, "inveva*"); len(got) != 0 {
		t.Fatalf("WHO by mask lists an invisible user: %q", got)
	}
	if got := who(other, "#invchan"); len(got) != 0 {
		t.Fatalf("WHO of a channel one is not in lists an invisible user: %q", got)
	}
	if got := who(other, "invevan"); !slices.Equal(got, []string{"invevan"}) {
		t.Fatalf("WHO of the exact nick: %q", got)
	}
	if got := who(evan, "inveva*"); !slices.Equal(got, []string{"invevan"}) {
		t.Fatalf("WHO of oneself by mask: %q", got)
	}
	joinChannels(t, other, "#invchan")
	if got := who(other, "inveva*"); !slices.Equal(got, []string{"invevan"}) {
		t.Fatalf("WHO by mask sharing a channel: %q", got)
	}

	sendLines(t, evan, "MODE invevan +iZ")
	expect(t, evan, "501")
	sendLines(t, evan, "MODE invevan -i")
	expectParams(t, evan, "MODE", "invevan", "-i")
	sendLines(t, other, "PART #invchan")
	if got := who(other, "inveva*"); !slices.Equal(got, []string{"invevan"}) {
		t.Fatalf("WHO by mask after -i: %q", got)
	}
}

// TestIRCListUserCount follows ELIST=U (modern IRC, ISUPPORT ELIST): LIST >n lists the channels
// with more than n users, LIST <n those with fewer than n, and the two combine.
func TestIRCListUserCount(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	a, _ := guest(t, n, "elista")
	b, _ := guest(t, n, "elistb")
	sendLines(t, a, "VERSION")
	expect(t, a, "005", "ELIST=U")
	joinChannels(t, a, "#elist-one", "#elist-two")
	joinChannels(t, b, "#elist-two")
	list := func(arg string) []string {
		t.Helper()
		sendLines(t, a, "LIST "+arg)
		var names []string
		for _, m := range readUntil(t, a, "323", func(m ircmsg.Message) bool { return m.Command == "323" }) {
			if m.Command == "322" && strings.HasPrefix(m.Param(1), "#elist-") {
				names = append(names, m.Param(1))
			}
		}
		slices.Sort(names)
		return names
	}
	for _, tc := range []struct {
		arg  string
		want []string
	}{
		{">0", []string{"#elist-one", "#elist-two"}},
		{">1", []string{"#elist-two"}},
		{"<2", []string{"#elist-one"}},
		{"<1", nil},
		{">0,<2", []string{"#elist-one"}},
		{"#elist-two,>0", []string{"#elist-two"}},
	} {
		if got := list(tc.arg); !slices.Equal(got, tc.want) {
			t.Errorf("LIST %s: %q, want %q", tc.arg, got, tc.want)
		}
	}
}
