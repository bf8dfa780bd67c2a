package irc_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

func TestIRCJoinAndPart(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)

	t.Run("several channels with keys", func(t *testing.T) {
		op, _ := guest(t, n, "keyop")
		chanOp(t, op, "#jk1")
		chanOp(t, op, "#jk2")
		chanOp(t, op, "#jk3")
		sendLines(t, op, "MODE #jk1 +k one", "MODE #jk3 +k three")
		expect(t, op, "MODE", "#jk1", "+k", "one")
		expect(t, op, "MODE", "#jk3", "+k", "three")

		j, _ := guest(t, n, "keyjoiner")
		sendLines(t, j, "JOIN #jk1,#jk2,#jk3 one,,three")
		for _, ch := range []string{"#jk1", "#jk2", "#jk3"} {
			expectFrom(t, j, "keyjoiner", "JOIN", ch)
			expectEndOfNames(t, j, ch)
			expectFrom(t, op, "keyjoiner", "JOIN", ch)
		}

		w, _ := guest(t, n, "wrongkey")
		sendLines(t, w, "JOIN #JK1,#jk3 wrong,three")
		expectParams(t, w, "475", "wrongkey", "#jk1", "Cannot join channel (+k)")
		expectFrom(t, w, "wrongkey", "JOIN", "#jk3")

		t.Run("JOIN 0 parts them all", func(t *testing.T) {
			sendLines(t, j, "JOIN 0")
			parted := map[string]bool{}
			readUntil(t, op, "three PARTs", func(m ircmsg.Message) bool {
				if m.Command == "PART" && isFrom(m, "keyjoiner") {
					parted[m.Param(0)] = true
				}
				return len(parted) == 3
			})
			if !parted["#jk1"] || !parted["#jk2"] || !parted["#jk3"] {
				t.Fatalf("parted %v", parted)
			}
			sendLines(t, op, "NAMES #jk2")
			names := expect(t, op, "353", "#jk2")
			if strings.Contains(names.Param(3), "keyjoiner") {
				t.Fatalf("keyjoiner still listed: %q", names.String())
			}
		})
	})

	t.Run("PART with a reason", func(t *testing.T) {
		a, _ := guest(t, n, "parta")
		b, _ := guest(t, n, "partb")
		joinChannels(t, a, "#partreason")
		joinChannels(t, b, "#partreason")
		sendLines(t, b, "PART #PartReason :gone fishing")
		m := expectFrom(t, a, "partb", "PART")
		if strings.Join(m.Params, "|") != "#partreason|gone fishing" {
			t.Fatalf("PART = %q", m.String())
		}
		expectFrom(t, b, "partb", "PART", "#partreason", "gone fishing")
		sendLines(t, b, "PART #partreason")
		expectParams(t, b, "442", "partb", "#partreason", "You're not on that channel")
	})

	t.Run("479 for bad channel names", func(t *testing.T) {
		c, _ := guest(t, n, "badnames")
		long := "#" + strings.Repeat("a", 64)
		cases := []struct{ name, text string }{
			{long, "Channel name too long (max 64 characters)"},
			{"nohash", "Illegal channel name"},
			{"#", "Illegal channel name"},
			{"#bell\x07name", "Illegal channel name"},
		}
		for _, tc := range cases {
			sendLines(t, c, "JOIN "+tc.name)
			expectParams(t, c, "479", "badnames", tc.name, tc.text)
		}
		// 64 characters is still a channel name.
		ok := "#" + strings.Repeat("b", 63)
		joinChannels(t, c, ok)
	})

	t.Run("405 after 100 channels", func(t *testing.T) {
		c, _ := guest(t, n, "collector")
		var names []string
		for i := 0; i < 100; i++ {
			names = append(names, fmt.Sprintf("#many%03d", i))
		}
		for i := 0; i < len(names); i += 25 {
			joinChannels(t, c, names[i:i+25]...)
		}
		sendLines(t, c, "JOIN #onetoomany")
		expectParams(t, c, "405", "collector", "#onetoomany", "You have joined too many channels")
		sendLines(t, c, "PART #many000")
		expectFrom(t, c, "collector", "PART", "#many000")
		joinChannels(t, c, "#onetoomany")
	})
}

func TestIRCChannelAccess(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	founder := newEd25519(t)
	op, _ := loginAs(t, n, founder, "accessop")

	t.Run("+i needs an invite, which is consumed", func(t *testing.T) {
		chanOp(t, op, "#inv", "+i")
		b, _ := guest(t, n, "invitee")
		sendLines(t, b, "JOIN #inv")
		expectParams(t, b, "473", "invitee", "#inv", "Cannot join channel (+i)")
		sendLines(t, op, "INVITE invitee #inv")
		expectParams(t, op, "341", "accessop", "invitee", "#inv")
		inv := expectFrom(t, b, "accessop", "INVITE")
		if strings.Join(inv.Params, " ") != "invitee #inv" {
			t.Fatalf("INVITE = %q", inv.String())
		}
		joinChannels(t, b, "#inv")
		sendLines(t, b, "PART #inv")
		expectFrom(t, b, "invitee", "PART", "#inv")
		sendLines(t, b, "JOIN #inv")
		expect(t, b, "473", "#inv")
		// Only an op of a +i channel may invite, only a member may, and not a member again.
		other, _ := guest(t, n, "invoutsider")
		sendLines(t, other, "INVITE invitee #inv")
		expectParams(t, other, "442", "invoutsider", "#inv", "You're not on that channel")
		sendLines(t, op, "INVITE invoutsider #inv")
		expect(t, op, "341", "invoutsider")
		joinChannels(t, other, "#inv")
		sendLines(t, other, "INVITE invitee #inv")
		expectParams(t, other, "482", "invoutsider", "#inv", "You're not channel operator")
		sendLines(t, op, "INVITE invoutsider #inv")
		expectParams(t, op, "443", "accessop", "invoutsider", "#inv", "is already on channel")
	})

	t.Run("+k needs the key", func(t *testing.T) {
		chanOp(t, op, "#keyed", "+k s3cret")
		b, _ := guest(t, n, "keyless")
		sendLines(t, b, "JOIN #keyed")
		expectParams(t, b, "475", "keyless", "#keyed", "Cannot join channel (+k)")
		sendLines(t, b, "JOIN #keyed nope")
		expect(t, b, "475", "#keyed")
		sendLines(t, b, "JOIN #keyed s3cret")
		expectFrom(t, b, "keyless", "JOIN", "#keyed")
	})

	t.Run("+b by mask and by DID", func(t *testing.T) {
		banned := newEd25519(t)
		chanOp(t, op, "#bans", "+b banme!*@*", "+b "+banned.DID())
		g, _ := guest(t, n, "banme")
		sendLines(t, g, "JOIN #bans")
		expectParams(t, g, "474", "banme", "#bans", "Cannot join channel (+b)")

		// The DID ban holds whatever nick the DID uses.
		d, _ := loginAs(t, n, banned, "innocentnick")
		sendLines(t, d, "JOIN #bans")
		expect(t, d, "474", "#bans")

		ok, _ := guest(t, n, "notbanned")
		joinChannels(t, ok, "#bans")
	})

	t.Run("a ban beats an invite", func(t *testing.T) {
		chanOp(t, op, "#baninv", "+i", "+b evil!*@*")
		e, _ := guest(t, n, "evil")
		sendLines(t, op, "INVITE evil #baninv")
		expect(t, op, "341", "evil")
		expectFrom(t, e, "accessop", "INVITE", "#baninv")
		sendLines(t, e, "JOIN #baninv")
		expect(t, e, "474", "#baninv")
	})

	t.Run("+I lets a user through +i", func(t *testing.T) {
		friendDID := newEd25519(t)
		chanOp(t, op, "#except", "+i", "+I friend!*@*", "+I "+friendDID.DID())
		f, _ := guest(t, n, "friend")
		joinChannels(t, f, "#except")
		fd, _ := loginAs(t, n, friendDID, "didfriend")
		joinChannels(t, fd, "#except")
		s, _ := guest(t, n, "stranger")
		sendLines(t, s, "JOIN #except")
		expect(t, s, "473", "#except")
	})

	t.Run("the founder rejoins +i and is opped", func(t *testing.T) {
		chanOp(t, op, "#founded", "+i")
		sendLines(t, op, "PART #founded")
		expectFrom(t, op, "accessop", "PART", "#founded")
		sendLines(t, op, "JOIN #founded")
		msgs := readUntil(t, op, "366 #founded", func(m ircmsg.Message) bool { return m.Command == "366" })
		assertJoinThenOp(t, msgs, "accessop", "#founded")
	})

	t.Run("a DID given +o is opped when it rejoins", func(t *testing.T) {
		chanOp(t, op, "#didops")
		helperSigner := newEd25519(t)
		h, _ := loginAs(t, n, helperSigner, "didhelper")
		joinChannels(t, h, "#didops")
		sendLines(t, op, "MODE #didops +o didhelper")
		expectParams(t, h, "MODE", "#didops", "+o", "didhelper")
		sendLines(t, h, "PART #didops")
		expectFrom(t, op, "didhelper", "PART", "#didops")
		sendLines(t, h, "JOIN #didops")
		msgs := readUntil(t, h, "366 #didops", func(m ircmsg.Message) bool { return m.Command == "366" })
		assertJoinThenOp(t, msgs, "didhelper", "#didops")
		// The other members see the JOIN and then the server's MODE.
		expectFrom(t, op, "didhelper", "JOIN", "#didops")
		m := expectParams(t, op, "MODE", "#didops", "+o", "didhelper")
		if m.Source != "palaver.test" {
			t.Fatalf("auto-op MODE source %q, want the server", m.Source)
		}

		t.Run("-o on the founder is ignored", func(t *testing.T) {
			sendLines(t, h, "MODE #didops -o accessop")
			refuteMsg(t, drain(t, h), "MODE", "#didops", "-o")
			refuteMsg(t, drain(t, op), "MODE", "#didops", "-o")
			sendLines(t, h, "NAMES #didops")
			names := expect(t, h, "353", "#didops")
			if !strings.Contains(" "+names.Param(3)+" ", " @accessop ") {
				t.Fatalf("founder lost op: %q", names.String())
			}
		})
	})
}

// assertJoinThenOp checks that a rejoin shows the JOIN echo first and then the server's +o.
func assertJoinThenOp(t *testing.T, msgs []ircmsg.Message, nick, channel string) {
	t.Helper()
	join, mode := -1, -1
	for i, m := range msgs {
		switch {
		case m.Command == "JOIN" && isFrom(m, nick) && m.Param(0) == channel:
			join = i
		case m.Command == "MODE" && strings.Join(m.Params, " ") == channel+" +o "+nick:
			if m.Source != "palaver.test" {
				t.Fatalf("auto-op MODE source %q", m.Source)
			}
			mode = i
		}
	}
	if join < 0 || mode < 0 || mode < join {
		t.Fatalf("want JOIN then MODE %s +o %s, got %q", channel, nick, commandsOf(msgs))
	}
}

func TestIRCChannelPrivileges(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	op, _ := guest(t, n, "privop")
	half, _ := guest(t, n, "privhalf")
	plain, _ := guest(t, n, "privplain")
	outsider, _ := guest(t, n, "privout")
	chanOp(t, op, "#priv")
	joinChannels(t, half, "#priv")
	joinChannels(t, plain, "#priv")
	sendLines(t, op, "MODE #priv +h privhalf")
	expectParams(t, half, "MODE", "#priv", "+h", "privhalf")

	t.Run("a halfop may voice but not ban or op", func(t *testing.T) {
		sendLines(t, half, "MODE #priv +v privplain")
		m := expectFrom(t, plain, "privhalf", "MODE")
		if strings.Join(m.Params, " ") != "#priv +v privplain" {
			t.Fatalf("MODE = %q", m.String())
		}
		sendLines(t, half, "MODE #priv +b someone!*@*")
		expectParams(t, half, "482", "privhalf", "#priv", "You're not channel operator")
		sendLines(t, half, "MODE #priv +o privplain")
		expect(t, half, "482", "#priv")
		sendLines(t, half, "MODE #priv -v privplain")
		expectFrom(t, plain, "privhalf", "MODE", "#priv", "-v", "privplain")
	})

	t.Run("KICK", func(t *testing.T) {
		victim, _ := guest(t, n, "privvictim")
		joinChannels(t, victim, "#priv")
		sendLines(t, plain, "KICK #priv privvictim :no")
		expectParams(t, plain, "482", "privplain", "#priv", "You're not channel operator")
		sendLines(t, op, "KICK #priv privoutsider")
		expectParams(t, op, "401", "privop", "privoutsider", "No such nick/channel")
		sendLines(t, op, "KICK #priv privout :not here")
		expectParams(t, op, "441", "privop", "privout", "#priv", "They aren't on that channel")
		sendLines(t, op, "KICK #priv privvictim :behave")
		k := expectFrom(t, victim, "privop", "KICK")
		if strings.Join(k.Params, "|") != "#priv|privvictim|behave" {
			t.Fatalf("KICK = %q", k.String())
		}
		expectFrom(t, plain, "privop", "KICK", "#priv", "privvictim", "behave")
		// A halfop may kick an ordinary member but not an op.
		joinChannels(t, victim, "#priv")
		sendLines(t, half, "KICK #priv privop")
		expect(t, half, "482", "#priv")
		sendLines(t, half, "KICK #priv privvictim")
		expectFrom(t, victim, "privhalf", "KICK", "#priv", "privvictim")
	})

	t.Run("TOPIC", func(t *testing.T) {
		sendLines(t, plain, "TOPIC #priv")
		expectParams(t, plain, "331", "privplain", "#priv", "No topic is set")
		sendLines(t, plain, "TOPIC #priv :from a member")
		expectParams(t, plain, "482", "privplain", "#priv", "You're not channel operator")
		sendLines(t, op, "TOPIC #priv :set by the op")
		tm := expectFrom(t, plain, "privop", "TOPIC")
		if strings.Join(tm.Params, "|") != "#priv|set by the op" {
			t.Fatalf("TOPIC = %q", tm.String())
		}
		sendLines(t, outsider, "TOPIC #priv")
		expectParams(t, outsider, "332", "privout", "#priv", "set by the op")
		who := expect(t, outsider, "333", "#priv")
		if !strings.HasPrefix(who.Param(2), "privop!") || who.Param(3) == "" || who.Param(3) == "0" {
			t.Fatalf("333 = %q", who.String())
		}
		sendLines(t, outsider, "TOPIC #priv :outsider")
		expect(t, outsider, "442", "#priv")
		sendLines(t, op, "MODE #priv -t")
		expectFrom(t, plain, "privop", "MODE", "#priv", "-t")
		sendLines(t, plain, "TOPIC #priv :anyone now")
		expectFrom(t, op, "privplain", "TOPIC", "#priv", "anyone now")
		sendLines(t, op, "TOPIC #priv :")
		cleared := expectFrom(t, plain, "privop", "TOPIC", "#priv")
		if len(cleared.Params) != 2 || cleared.Param(1) != "" {
			t.Fatalf("clearing TOPIC = %q", cleared.String())
		}
		sendLines(t, plain, "TOPIC #priv")
		expect(t, plain, "331", "#priv")
		sendLines(t, op, "TOPIC #priv :"+strings.Repeat("t", 513))
		expectParams(t, op, "FAIL", "TOPIC", "TOO_LONG", "#priv", "Topic is too long (max 512 bytes)")
	})

	t.Run("NAMES with and without multi-prefix", func(t *testing.T) {
		sendLines(t, op, "MODE #priv +v privop")
		expectFrom(t, op, "privop", "MODE", "#priv", "+v", "privop")
		multi, _ := guest(t, n, "privmulti", "multi-prefix")
		for _, tc := range []struct {
			name string
			want []string
		}{{"privout", []string{"@privop", "%privhalf"}}, {"privmulti", []string{"@+privop", "%privhalf"}}} {
			c := outsider
			if tc.name == "privmulti" {
				c = multi
			}
			sendLines(t, c, "NAMES #priv")
			msgs := readUntil(t, c, "366", func(m ircmsg.Message) bool { return m.Command == "366" })
			var entries []string
			for _, m := range msgs {
				if m.Command == "353" {
					if m.Param(1) != "=" {
						t.Fatalf("353 symbol %q for a public channel", m.Param(1))
					}
					entries = append(entries, strings.Fields(m.Param(3))...)
				}
			}
			for _, w := range tc.want {
				if !contains(entries, w) {
					t.Errorf("%s: NAMES %q lacks %q", tc.name, entries, w)
				}
			}
		}
		sendLines(t, multi, "WHO #priv")
		expect(t, multi, "352", "#priv", "privop", "H@+")
		sendLines(t, outsider, "WHO #priv")
		who := expect(t, outsider, "352", "#priv", "privop")
		if who.Param(6) != "H@" {
			t.Fatalf("352 without multi-prefix = %q", who.String())
		}
	})
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func TestIRCChannelVisibilityAndLists(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	op, _ := guest(t, n, "visop")
	outsider, _ := guest(t, n, "visout")

	t.Run("restricted channels hide NAMES and WHO from non-members", func(t *testing.T) {
		chanOp(t, op, "#hidden", "+i")
		sendLines(t, outsider, "NAMES #hidden")
		msgs := readUntil(t, outsider, "366", func(m ircmsg.Message) bool { return m.Command == "366" })
		refuteMsg(t, msgs, "353")
		sendLines(t, outsider, "WHO #hidden")
		msgs = readUntil(t, outsider, "315", func(m ircmsg.Message) bool { return m.Command == "315" })
		refuteMsg(t, msgs, "352")
		// Members see them, with the public symbol ("*" would claim a +p mode).
		sendLines(t, op, "NAMES #hidden")
		names := expect(t, op, "353", "#hidden")
		if names.Param(1) != "=" || !strings.Contains(names.Param(3), "@visop") {
			t.Fatalf("member NAMES = %q", names.String())
		}
		sendLines(t, op, "WHO #hidden")
		expect(t, op, "352", "#hidden", "visop")
	})

	t.Run("LIST hides +i and +k channels from non-members", func(t *testing.T) {
		chanOp(t, op, "#listopen")
		chanOp(t, op, "#listinv", "+i")
		chanOp(t, op, "#listkey", "+k k")
		listed := func(nick string) map[string]bool {
			c := outsider
			if nick == "visop" {
				c = op
			}
			sendLines(t, c, "LIST")
			msgs := readUntil(t, c, "323", func(m ircmsg.Message) bool { return m.Command == "323" })
			out := map[string]bool{}
			for _, m := range msgs {
				if m.Command == "322" {
					out[m.Param(1)] = true
				}
			}
			return out
		}
		got := listed("visout")
		if !got["#listopen"] || got["#listinv"] || got["#listkey"] {
			t.Fatalf("outsider LIST = %v", got)
		}
		got = listed("visop")
		if !got["#listopen"] || !got["#listinv"] || !got["#listkey"] {
			t.Fatalf("member LIST = %v", got)
		}
	})

	t.Run("MODE query lists modes as +ntimEk", func(t *testing.T) {
		chanOp(t, op, "#allmodes", "+Ekmi hidden")
		sendLines(t, op, "MODE #allmodes")
		m := expect(t, op, "324", "#allmodes")
		if m.Param(2) != "+ntimEk" {
			t.Fatalf("324 = %q, want +ntimEk", m.String())
		}
		expect(t, op, "329", "#allmodes")
		sendLines(t, outsider, "MODE #allmodes")
		m = expect(t, outsider, "324", "#allmodes")
		if m.Param(2) != "+ntimEk" || len(m.Params) != 3 {
			t.Fatalf("non-member 324 = %q: want the modes without the key", m.String())
		}
	})

	t.Run("MODE errors", func(t *testing.T) {
		chanOp(t, op, "#modeerr")
		cases := []struct{ line, code string }{
			{"MODE #modeerr +z", "472"},
			{"MODE #modeerr +k", "461"},
			{"MODE #modeerr +o", "461"},
			{"MODE #modeerr +o nosuchnick", "401"},
			{"MODE #modeerr +k a,b", "696"},
			{"MODE #nosuchchannel +m", "403"},
			{"MODE visout +i", "502"},
			{"MODE visop +x", "501"},
		}
		for _, tc := range cases {
			sendLines(t, op, tc.line)
			if _, ok := findMsg(drain(t, op), tc.code); !ok {
				t.Errorf("%s: no %s", tc.line, tc.code)
			}
		}
		sendLines(t, outsider, "MODE #modeerr +m")
		expectParams(t, outsider, "482", "visout", "#modeerr", "You're not channel operator")
	})

	t.Run("ban and exception lists", func(t *testing.T) {
		chanOp(t, op, "#lists", "+bb one!*@* did:key:z6MkListed", "+I friend!*@*")
		sendLines(t, op, "MODE #lists b")
		msgs := readUntil(t, op, "368", func(m ircmsg.Message) bool { return m.Command == "368" })
		var bans []string
		for _, m := range msgs {
			if m.Command == "367" {
				if m.Param(1) != "#lists" || !strings.HasPrefix(m.Param(3), "visop!") || m.Param(4) == "" {
					t.Fatalf("367 = %q", m.String())
				}
				bans = append(bans, m.Param(2))
			}
		}
		if strings.Join(bans, " ") != "one!*@* did:key:z6MkListed" {
			t.Fatalf("ban list %q", bans)
		}
		expectSeenParams(t, op, "368", "#lists", "End of channel ban list")
		sendLines(t, op, "MODE #lists +I")
		ex := expect(t, op, "346", "#lists", "friend!*@*")
		if !strings.HasPrefix(ex.Param(3), "visop!") {
			t.Fatalf("346 = %q", ex.String())
		}
		expectParams(t, op, "347", "visop", "#lists", "End of channel invite exception list")
		// Non-members of a public channel may read its lists too; of a restricted one, not.
		sendLines(t, outsider, "MODE #lists b")
		expect(t, outsider, "367", "#lists", "one!*@*")
	})

	t.Run("478 when the ban list holds 500 masks", func(t *testing.T) {
		chanOp(t, op, "#fullbans")
		for i := 0; i < 500; i += 6 {
			var masks []string
			for j := i; j < i+6 && j < 500; j++ {
				masks = append(masks, fmt.Sprintf("mask%03d!*@*", j))
			}
			sendLines(t, op, "MODE #fullbans +"+strings.Repeat("b", len(masks))+" "+strings.Join(masks, " "))
			expectFrom(t, op, "visop", "MODE", "#fullbans", masks[len(masks)-1])
		}
		sendLines(t, op, "MODE #fullbans +b onemore!*@*")
		expectParams(t, op, "478", "visop", "#fullbans", "onemore!*@*", "Channel ban list is full")
		// Removing one makes room again.
		sendLines(t, op, "MODE #fullbans -b mask000!*@*", "MODE #fullbans +b onemore!*@*")
		expectFrom(t, op, "visop", "MODE", "#fullbans", "+b", "onemore!*@*")
	})
}

// TestIRCJoinEchoPrecedesChannelTraffic: a client must not see a channel's messages before its own
// JOIN of that channel. A member talks without pause while others join; each joiner's first line
// about the channel must be its JOIN echo. (With the bug present this fails in most runs, not all:
// it depends on a message landing between the JOIN being applied and the JOIN reply being flushed.)
func TestIRCJoinEchoPrecedesChannelTraffic(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	talker, _ := guest(t, n, "talker", "echo-message")
	joinChannels(t, talker, "#busy")
	for i := 0; i < 30; i++ {
		sendLines(t, talker, fmt.Sprintf("PRIVMSG #busy :warmup %d", i))
	}
	syncClient(t, talker)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	ctx := testCtx(t)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			text := fmt.Sprintf("live %d", i)
			if talker.Send("PRIVMSG #busy :"+text) != nil {
				return
			}
			if _, err := talker.Expect(ctx, func(m ircmsg.Message) bool { return m.Command == "PRIVMSG" && m.Param(1) == text }); err != nil {
				return
			}
		}
	}()
	defer wg.Wait()
	defer close(stop)

	for round := 0; round < 30; round++ {
		nick := fmt.Sprintf("joiner%d", round)
		c, _ := guest(t, n, nick)
		sendLines(t, c, "JOIN #busy")
		first, err := c.Expect(testCtx(t), func(m ircmsg.Message) bool {
			return (m.Command == "PRIVMSG" && m.Tags["batch"] == "") || m.Command == "JOIN"
		})
		if err != nil {
			t.Fatal(err)
		}
		if first.Command != "JOIN" || !isFrom(first, nick) {
			t.Fatalf("round %d: %s saw %q before its own JOIN", round, nick, first.String())
		}
		c.Close()
	}
}
