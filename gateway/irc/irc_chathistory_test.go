package irc_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// sentMsg is a channel message as its sender's echo showed it.
type sentMsg struct {
	text, msgid string
	at          time.Time // millisecond precision, as stored
}

// historyCaps are the capabilities a history reader negotiates (LoginSASL adds message-tags).
var historyCaps = []string{"draft/chathistory", "batch", "server-time", "echo-message", "account-tag"}

// fillChannel sends count messages to channel from c (which has echo-message and message-tags) and
// returns them in order.
func fillChannel(t *testing.T, c *ircclient.Client, nick, channel string, count int) []sentMsg {
	t.Helper()
	out := make([]sentMsg, 0, count)
	for i := 0; i < count; i++ {
		text := fmt.Sprintf("history %02d", i)
		sendLines(t, c, "PRIVMSG "+channel+" :"+text)
		echo := expectFrom(t, c, nick, "PRIVMSG", channel, text)
		at, err := time.Parse("2006-01-02T15:04:05.000Z", echo.Tags["time"])
		if err != nil || echo.Tags["msgid"] == "" {
			t.Fatalf("echo without msgid or time: %q", echo.String())
		}
		out = append(out, sentMsg{text: text, msgid: echo.Tags["msgid"], at: at})
	}
	return out
}

// historyBatch sends a CHATHISTORY command and returns the messages of the chathistory batch.
func historyBatch(t *testing.T, c *ircclient.Client, command, target string) []ircmsg.Message {
	t.Helper()
	sendLines(t, c, command)
	start, body := batchBody(t, c, "chathistory")
	if start.Param(2) != target {
		t.Fatalf("%s: batch %q, want target %s", command, start.String(), target)
	}
	return body
}

func pick(all []sentMsg, keep func(i int, m sentMsg) bool) []string {
	var out []string
	for i, m := range all {
		if keep(i, m) {
			out = append(out, m.text)
		}
	}
	return out
}

func newest(list []string, n int) []string {
	if len(list) > n {
		return list[len(list)-n:]
	}
	return list
}

func oldest(list []string, n int) []string {
	if len(list) > n {
		return list[:n]
	}
	return list
}

func ts(m sentMsg) string { return "timestamp=" + m.at.UTC().Format("2006-01-02T15:04:05.000Z") }

func TestIRCChatHistory(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	alice, ares := login(t, n, "histalice", historyCaps...)
	joinChannels(t, alice, "#hist")
	msgs := fillChannel(t, alice, "histalice", "#hist", 30)

	// around is the IRCv3 AROUND page: about half before the centre, the rest after.
	around := func(before, after []string, limit int) []string {
		nb := min(limit/2, len(before))
		na := min(limit-nb, len(after))
		nb = min(limit-na, len(before))
		return append(append([]string{}, newest(before, nb)...), oldest(after, na)...)
	}
	c20, c5, c12 := msgs[20], msgs[5], msgs[12]
	cases := []struct {
		name, command string
		want          []string
	}{
		{"LATEST *", "CHATHISTORY LATEST #hist * 5", pick(msgs, func(i int, _ sentMsg) bool { return i >= 25 })},
		{"LATEST * over the cap", "CHATHISTORY LATEST #hist * 100000", pick(msgs, func(int, sentMsg) bool { return true })},
		{"LATEST msgid", "CHATHISTORY LATEST #hist msgid=" + c20.msgid + " 100", pick(msgs, func(i int, _ sentMsg) bool { return i > 20 })},
		{"LATEST timestamp", "CHATHISTORY LATEST #hist " + ts(c20) + " 3",
			newest(pick(msgs, func(_ int, m sentMsg) bool { return m.at.After(c20.at) }), 3)},
		{"BEFORE msgid", "CHATHISTORY BEFORE #hist msgid=" + c20.msgid + " 5", pick(msgs, func(i int, _ sentMsg) bool { return i >= 15 && i < 20 })},
		{"BEFORE timestamp", "CHATHISTORY BEFORE #hist " + ts(c20) + " 5",
			newest(pick(msgs, func(_ int, m sentMsg) bool { return m.at.Before(c20.at) }), 5)},
		{"AFTER msgid", "CHATHISTORY AFTER #hist msgid=" + c20.msgid + " 5", pick(msgs, func(i int, _ sentMsg) bool { return i > 20 && i <= 25 })},
		{"AFTER timestamp", "CHATHISTORY AFTER #hist " + ts(c20) + " 5",
			oldest(pick(msgs, func(_ int, m sentMsg) bool { return m.at.After(c20.at) }), 5)},
		{"AROUND msgid", "CHATHISTORY AROUND #hist msgid=" + c20.msgid + " 5", pick(msgs, func(i int, _ sentMsg) bool { return i >= 18 && i <= 22 })},
		{"AROUND timestamp", "CHATHISTORY AROUND #hist " + ts(c20) + " 6", around(
			pick(msgs, func(_ int, m sentMsg) bool { return m.at.Before(c20.at) }),
			pick(msgs, func(_ int, m sentMsg) bool { return !m.at.Before(c20.at) }), 6)},
		{"BETWEEN msgids", "CHATHISTORY BETWEEN #hist msgid=" + c5.msgid + " msgid=" + c12.msgid + " 100",
			pick(msgs, func(i int, _ sentMsg) bool { return i > 5 && i < 12 })},
		{"BETWEEN msgids backwards", "CHATHISTORY BETWEEN #hist msgid=" + c12.msgid + " msgid=" + c5.msgid + " 3",
			pick(msgs, func(i int, _ sentMsg) bool { return i >= 9 && i < 12 })},
		{"BETWEEN timestamps", "CHATHISTORY BETWEEN #hist " + ts(c5) + " " + ts(c12) + " 100",
			pick(msgs, func(_ int, m sentMsg) bool { return m.at.After(c5.at) && m.at.Before(c12.at) })},
		{"BEFORE an unknown msgid", "CHATHISTORY BEFORE #hist msgid=01HZZZZZZZZZZZZZZZZZZZZZZZ 5", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := historyBatch(t, alice, tc.command, "#hist")
			got := texts(body)
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("%s\n got %q\nwant %q", tc.command, got, tc.want)
			}
			for _, m := range body {
				if m.Command != "PRIVMSG" || m.Param(0) != "#hist" || !isFrom(m, "histalice") ||
					m.Tags["msgid"] == "" || m.Tags["time"] == "" || m.Tags["account"] != ares.DID {
					t.Fatalf("history line %q", m.String())
				}
			}
		})
	}

	t.Run("replayed msgids and times are the originals", func(t *testing.T) {
		body := historyBatch(t, alice, "CHATHISTORY LATEST #hist * 30", "#hist")
		for i, m := range body {
			if m.Tags["msgid"] != msgs[i].msgid || m.Tags["time"] != msgs[i].at.UTC().Format("2006-01-02T15:04:05.000Z") {
				t.Fatalf("line %d = %q, sent as %+v", i, m.String(), msgs[i])
			}
		}
	})

	t.Run("the limit is capped at CHATHISTORY=500", func(t *testing.T) {
		joinChannels(t, alice, "#histcap")
		for i := 0; i < 510; i++ {
			sendLines(t, alice, fmt.Sprintf("PRIVMSG #histcap :%d", i))
		}
		expectFrom(t, alice, "histalice", "PRIVMSG", "#histcap", "509")
		body := historyBatch(t, alice, "CHATHISTORY LATEST #histcap * 1000", "#histcap")
		got := texts(body)
		if len(got) != 500 || got[0] != "10" || got[499] != "509" {
			t.Fatalf("got %d messages (%.3q ... ), want the newest 500", len(got), got)
		}
	})

	t.Run("the batch names the canonical target", func(t *testing.T) {
		body := historyBatch(t, alice, "CHATHISTORY LATEST #HIST * 2", "#hist")
		if got := texts(body); len(got) != 2 {
			t.Fatalf("history %q", got)
		}
	})

	t.Run("INVALID_TARGET names the subcommand and the target", func(t *testing.T) {
		outsider, _ := login(t, n, "histout2", historyCaps...)
		sendLines(t, outsider, "CHATHISTORY BEFORE #hist * 10", "CHATHISTORY LATEST #hist * 10")
		m := expect(t, outsider, "FAIL", "CHATHISTORY", "INVALID_TARGET")
		if m.Param(2) != "LATEST" || m.Param(3) != "#hist" {
			t.Fatalf("got %q, want FAIL CHATHISTORY INVALID_TARGET LATEST #hist :...", m.String())
		}
	})

	t.Run("errors", func(t *testing.T) {
		outsider, _ := login(t, n, "histout", historyCaps...)
		g, _ := guest(t, n, "histguest", historyCaps...)
		fails := []struct {
			name string
			c    *ircclient.Client
			line string
			code []string // any of these
			ctx  string
		}{
			{"non-member", outsider, "CHATHISTORY LATEST #hist * 10", []string{"INVALID_TARGET"}, "#hist"},
			{"unknown channel", alice, "CHATHISTORY LATEST #nowhere * 10", []string{"INVALID_TARGET"}, "#nowhere"},
			{"unknown subcommand", alice, "CHATHISTORY SIDEWAYS #hist * 10", []string{"INVALID_PARAMS", "UNKNOWN_COMMAND"}, "SIDEWAYS"},
			{"missing parameters", alice, "CHATHISTORY LATEST #hist *", []string{"NEED_MORE_PARAMS", "INVALID_PARAMS"}, ""},
			{"BETWEEN with one reference", alice, "CHATHISTORY BETWEEN #hist * 10", []string{"NEED_MORE_PARAMS", "INVALID_PARAMS"}, ""},
			{"bad reference", alice, "CHATHISTORY BEFORE #hist yesterday 10", []string{"INVALID_PARAMS"}, "yesterday"},
			{"bad timestamp", alice, "CHATHISTORY BEFORE #hist timestamp=notatime 10", []string{"INVALID_PARAMS"}, "timestamp=notatime"},
			{"* outside LATEST", alice, "CHATHISTORY BEFORE #hist * 10", []string{"INVALID_PARAMS"}, ""},
			{"bad limit", alice, "CHATHISTORY LATEST #hist * lots", []string{"INVALID_PARAMS"}, ""},
			{"zero limit", alice, "CHATHISTORY LATEST #hist * 0", []string{"INVALID_PARAMS"}, ""},
			{"DM history as a guest", g, "CHATHISTORY LATEST histalice * 10", []string{"ACCOUNT_REQUIRED"}, "histalice"},
		}
		for _, tc := range fails {
			t.Run(tc.name, func(t *testing.T) {
				sendLines(t, tc.c, tc.line)
				m := expect(t, tc.c, "FAIL", "CHATHISTORY")
				if m.Param(0) != "CHATHISTORY" || !contains(tc.code, m.Param(1)) || !paramsContain(m, tc.ctx) {
					t.Fatalf("%s: got %q, want FAIL CHATHISTORY %v ... %s", tc.line, m.String(), tc.code, tc.ctx)
				}
				refuteMsg(t, drain(t, tc.c), "BATCH")
			})
		}
	})

	t.Run("JOIN replays the latest 25 messages in a batch", func(t *testing.T) {
		late, _ := login(t, n, "histlate", "batch", "server-time")
		sendLines(t, late, "JOIN #hist")
		expectFrom(t, late, "histlate", "JOIN", "#hist")
		start, body := batchBody(t, late, "chathistory")
		if start.Param(2) != "#hist" {
			t.Fatalf("replay batch %q", start.String())
		}
		want := pick(msgs, func(i int, _ sentMsg) bool { return i >= 5 })
		if got := texts(body); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("replay %q, want %q", got, want)
		}
	})

	t.Run("no automatic replay for draft/chathistory clients", func(t *testing.T) {
		c, _ := login(t, n, "histfetcher", historyCaps...)
		sendLines(t, c, "JOIN #hist")
		msgs := readUntil(t, c, "366", func(m ircmsg.Message) bool { return m.Command == "366" })
		msgs = append(msgs, drain(t, c)...)
		refuteMsg(t, msgs, "BATCH")
		refuteMsg(t, msgs, "PRIVMSG")
	})
}

func TestIRCChatHistoryDirectMessages(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	aliceKey, bobKey := newEd25519(t), newEd25519(t)
	alice, _ := loginAs(t, n, aliceKey, "dmhalice", historyCaps...)
	bob, _ := loginAs(t, n, bobKey, "dmhbob", historyCaps...)
	sendLines(t, alice, "PRIVMSG dmhbob :one from alice")
	expectFrom(t, bob, "dmhalice", "PRIVMSG", "one from alice")
	sendLines(t, bob, "PRIVMSG dmhalice :two from bob")
	expectFrom(t, alice, "dmhbob", "PRIVMSG", "two from bob")
	sendLines(t, alice, "PRIVMSG "+bobKey.DID()+" :three by did")
	expectFrom(t, bob, "dmhalice", "PRIVMSG", "three by did")

	want := "one from alice,two from bob,three by did"
	for _, tc := range []struct {
		name   string
		c      *ircclient.Client
		target string
		me     string
	}{
		{"alice by nick", alice, "dmhbob", "dmhalice"},
		{"alice by DID", alice, bobKey.DID(), "dmhalice"},
		{"bob by nick", bob, "dmhalice", "dmhbob"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := historyBatch(t, tc.c, "CHATHISTORY LATEST "+tc.target+" * 10", tc.target)
			if got := strings.Join(texts(body), ","); got != want {
				t.Fatalf("history %q, want %q", got, want)
			}
			for _, m := range body {
				// Lines I sent are addressed to the target, lines sent to me to my nick.
				wantParam := tc.me
				if isFrom(m, tc.me) {
					wantParam = tc.target
				}
				if m.Param(0) != wantParam {
					t.Fatalf("history line %q: want it addressed to %s", m.String(), wantParam)
				}
			}
		})
	}

	t.Run("a third DID cannot read it", func(t *testing.T) {
		carol, _ := login(t, n, "dmhcarol", historyCaps...)
		body := historyBatch(t, carol, "CHATHISTORY LATEST dmhbob * 10", "dmhbob")
		if len(body) != 0 {
			t.Fatalf("carol read %q", texts(body))
		}
	})

	t.Run("a message to an offline DID is kept for it", func(t *testing.T) {
		quit(t, n, bob, "dmhbob")
		sendLines(t, alice, "PRIVMSG "+bobKey.DID()+" :while you were out")
		refuteMsg(t, drain(t, alice), "401")
		bob2, _ := loginAs(t, n, bobKey, "dmhbob", historyCaps...)
		body := historyBatch(t, bob2, "CHATHISTORY LATEST dmhalice * 1", "dmhalice")
		if got := strings.Join(texts(body), ","); got != "while you were out" {
			t.Fatalf("history %q", got)
		}
		// The conversation is still found by the nick its owner uses when that owner is offline.
		quit(t, n, alice, "dmhalice")
		body = historyBatch(t, bob2, "CHATHISTORY LATEST dmhalice * 2", "dmhalice")
		if got := strings.Join(texts(body), ","); got != "three by did,while you were out" {
			t.Fatalf("history with an offline owner %q", got)
		}
	})
}

// TestIRCChatHistoryGuestDirectMessages: draft/chathistory serves "the history of a target" for a
// nick target too, and a user's direct messages with a guest are kept for it. The guest has no
// DID, so the conversation is keyed by the guest's connection: the user reads it by the guest's
// nick while that connection holds it (across a nick change), and a later holder of the nick,
// guest or account, starts a conversation of its own.
func TestIRCChatHistoryGuestDirectMessages(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	alice, _ := login(t, n, "gdmalice", historyCaps...)
	g, _ := guest(t, n, "gdmguest", historyCaps...)
	sendLines(t, alice, "PRIVMSG gdmguest :hello guest")
	expectFrom(t, g, "gdmalice", "PRIVMSG", "hello guest")
	sendLines(t, g, "PRIVMSG gdmalice :hello alice")
	expectFrom(t, alice, "gdmguest", "PRIVMSG", "hello alice")

	// Nicks are case-insensitive: asked by another spelling, the batch names the target as asked
	// and the lines keep the nick they were sent to.
	for _, target := range []string{"gdmguest", "GDMGuest"} {
		body := historyBatch(t, alice, "CHATHISTORY LATEST "+target+" * 10", target)
		if got := strings.Join(texts(body), ","); got != "hello guest,hello alice" {
			t.Fatalf("alice's history with %s: %q", target, got)
		}
		for _, m := range body {
			want := "gdmalice" // lines sent to me are addressed to my nick, mine to the guest's
			if isFrom(m, "gdmalice") {
				want = "gdmguest"
			}
			if m.Param(0) != want {
				t.Fatalf("%s: history line %q: want it addressed to %s", target, m.String(), want)
			}
		}
	}

	t.Run("the guest reads no DM history", func(t *testing.T) {
		sendLines(t, g, "CHATHISTORY LATEST gdmalice * 10")
		expect(t, g, "FAIL", "CHATHISTORY", "ACCOUNT_REQUIRED", "gdmalice")
	})

	t.Run("a nick change keeps the conversation", func(t *testing.T) {
		sendLines(t, g, "NICK gdmguest2")
		expect(t, g, "NICK")
		sendLines(t, g, "PRIVMSG gdmalice :renamed")
		expectFrom(t, alice, "gdmguest2", "PRIVMSG", "renamed")
		body := historyBatch(t, alice, "CHATHISTORY LATEST gdmguest2 * 10", "gdmguest2")
		if got := strings.Join(texts(body), ","); got != "hello guest,hello alice,renamed" {
			t.Fatalf("history after the nick change: %q", got)
		}
	})

	// draft/chathistory TARGETS lists the conversations the client has messages in: this one too,
	// under the guest's current nick.
	t.Run("TARGETS names the guest", func(t *testing.T) {
		sendLines(t, alice, "CHATHISTORY TARGETS * * 50")
		_, body := batchBody(t, alice, "draft/chathistory-targets")
		var names []string
		for _, m := range body {
			names = append(names, m.Param(1))
		}
		if !slices.Contains(names, "gdmguest2") {
			t.Fatalf("TARGETS %q, want gdmguest2 among them", names)
		}
	})

	t.Run("another user cannot read it", func(t *testing.T) {
		carol, _ := login(t, n, "gdmcarol", historyCaps...)
		if body := historyBatch(t, carol, "CHATHISTORY LATEST gdmguest2 * 10", "gdmguest2"); len(body) != 0 {
			t.Fatalf("carol read %q", texts(body))
		}
	})

	t.Run("the next holder of the nick has a conversation of its own", func(t *testing.T) {
		quit(t, n, g, "gdmguest2")
		g2, _ := guest(t, n, "gdmguest2", historyCaps...)
		if body := historyBatch(t, alice, "CHATHISTORY LATEST gdmguest2 * 10", "gdmguest2"); len(body) != 0 {
			t.Fatalf("a new guest of the same nick shares the old conversation: %q", texts(body))
		}
		sendLines(t, g2, "PRIVMSG gdmalice :new guest")
		expectFrom(t, alice, "gdmguest2", "PRIVMSG", "new guest")
		body := historyBatch(t, alice, "CHATHISTORY LATEST gdmguest2 * 10", "gdmguest2")
		if got := strings.Join(texts(body), ","); got != "new guest" {
			t.Fatalf("history with the new guest: %q", got)
		}
		quit(t, n, g2, "gdmguest2")
		acct, _ := login(t, n, "gdmguest2", historyCaps...)
		if body := historyBatch(t, acct, "CHATHISTORY LATEST gdmalice * 10", "gdmalice"); len(body) != 0 {
			t.Fatalf("an account taking the nick reads the guests' conversations: %q", texts(body))
		}
	})
}

// TestIRCChatHistoryTargets: CHATHISTORY TARGETS (draft/chathistory-targets) lists the channels
// and direct conversations of the caller with their latest message time, readable venues only.
func TestIRCChatHistoryTargets(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	aliceKey := newEd25519(t)
	alice, _ := loginAs(t, n, aliceKey, "tgtalice", historyCaps...)
	bob, bobRes := login(t, n, "tgtbob", historyCaps...)
	carol, _ := login(t, n, "tgtcarol", historyCaps...)
	joinChannels(t, alice, "#tgt-mine")
	joinChannels(t, carol, "#tgt-theirs")
	first := fillChannel(t, alice, "tgtalice", "#tgt-mine", 1)[0]
	fillChannel(t, carol, "tgtcarol", "#tgt-theirs", 1) // alice is not in it
	sendLines(t, bob, "PRIVMSG tgtalice :a direct word")
	dm := expectFrom(t, alice, "tgtbob", "PRIVMSG", "a direct word")

	partners := map[string]string{}
	targets := func(t *testing.T, command string) map[string]string {
		t.Helper()
		sendLines(t, alice, command)
		_, body := batchBody(t, alice, "draft/chathistory-targets")
		out := map[string]string{}
		for _, m := range body {
			if m.Command != "CHATHISTORY" || m.Param(0) != "TARGETS" || len(m.Params) != 3 {
				t.Fatalf("%s: line %q", command, m.String())
			}
			out[m.Param(1)] = m.Param(2)
			partners[m.Param(1)] = m.Tags["freeq.at/partner-did"]
		}
		return out
	}
	t.Run("every conversation", func(t *testing.T) {
		got := targets(t, "CHATHISTORY TARGETS * * 50")
		if len(got) != 2 || got["#tgt-mine"] != first.at.Format("2006-01-02T15:04:05.000Z") || got["tgtbob"] != dm.Tags["time"] {
			t.Fatalf("targets = %v", got)
		}
		// A direct conversation names the partner's DID, as freeq's clients key it; a channel none.
		if partners["tgtbob"] != bobRes.DID || partners["#tgt-mine"] != "" {
			t.Fatalf("partner DIDs %v, want tgtbob as %s", partners, bobRes.DID)
		}
		// History asked for by that DID is the same conversation.
		body := historyBatch(t, alice, "CHATHISTORY LATEST "+bobRes.DID+" * 10", bobRes.DID)
		if got := texts(body); !slices.Equal(got, []string{"a direct word"}) {
			t.Fatalf("history by the partner's DID: %q", got)
		}
	})
	t.Run("without message-tags, no tag", func(t *testing.T) {
		plain, _ := loginAs(t, n, aliceKey, "tgtalice2", historyCaps...)
		sendLines(t, plain, "CAP REQ -message-tags")
		expect(t, plain, "CAP", "ACK")
		sendLines(t, plain, "CHATHISTORY TARGETS * * 50")
		_, body := batchBody(t, plain, "draft/chathistory-targets")
		for _, m := range body {
			if _, ok := m.Tags["freeq.at/partner-did"]; ok {
				t.Fatalf("a client without message-tags got %q", m.String())
			}
		}
	})
	t.Run("between timestamps", func(t *testing.T) {
		after := first.at.Add(time.Millisecond).Format("2006-01-02T15:04:05.000Z")
		got := targets(t, "CHATHISTORY TARGETS timestamp="+after+" timestamp=2999-01-01T00:00:00.000Z 50")
		dmAt, _ := time.Parse("2006-01-02T15:04:05.000Z", dm.Tags["time"])
		_, hasDM := got["tgtbob"]
		if _, ok := got["#tgt-mine"]; ok || hasDM != dmAt.After(first.at) {
			t.Fatalf("targets after the channel message (%s) = %v", after, got)
		}
	})
	t.Run("limit keeps the most recent", func(t *testing.T) {
		got := targets(t, "CHATHISTORY TARGETS * * 1")
		if len(got) != 1 || got["tgtbob"] == "" {
			t.Fatalf("targets with limit 1 = %v", got)
		}
	})
	// The limit counts from the first timestamp (draft/chathistory: TARGETS pages like BETWEEN).
	t.Run("limit counts from the first timestamp", func(t *testing.T) {
		const past, future = "timestamp=2000-01-01T00:00:00.000Z", "timestamp=2999-01-01T00:00:00.000Z"
		if got := targets(t, "CHATHISTORY TARGETS "+past+" "+future+" 1"); len(got) != 1 || got["#tgt-mine"] == "" {
			t.Fatalf("the earliest target after %s = %v", past, got)
		}
		if got := targets(t, "CHATHISTORY TARGETS "+future+" "+past+" 1"); len(got) != 1 || got["tgtbob"] == "" {
			t.Fatalf("the latest target before %s = %v", future, got)
		}
	})
	// A target is listed by its latest message: one whose latest message is past the window is
	// left out though older ones are in it, and the bounds are exclusive.
	t.Run("the latest message decides", func(t *testing.T) {
		later := fillChannel(t, alice, "tgtalice", "#tgt-mine", 1)[0]
		at := later.at.Format("2006-01-02T15:04:05.000Z")
		got := targets(t, "CHATHISTORY TARGETS timestamp=2000-01-01T00:00:00.000Z timestamp="+at+" 50")
		if _, ok := got["#tgt-mine"]; ok {
			t.Fatalf("a channel whose latest message (%s) ends the window is listed: %v", at, got)
		}
		got = targets(t, "CHATHISTORY TARGETS timestamp="+at+" * 50")
		if _, ok := got["#tgt-mine"]; ok {
			t.Fatalf("a channel whose latest message (%s) starts the window is listed: %v", at, got)
		}
		if got := targets(t, "CHATHISTORY TARGETS * * 50"); got["#tgt-mine"] != at {
			t.Fatalf("targets = %v, want #tgt-mine at %s", got, at)
		}
	})
	t.Run("bad parameters", func(t *testing.T) {
		sendLines(t, alice, "CHATHISTORY TARGETS yesterday * 10")
		expect(t, alice, "FAIL", "CHATHISTORY", "INVALID_PARAMS")
	})
}
