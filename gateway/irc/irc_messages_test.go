package irc_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

func TestIRCChannelMessages(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	alice, _ := guest(t, n, "chatalice")
	bob, _ := guest(t, n, "chatbob")
	outsider, _ := guest(t, n, "chatout")
	chanOp(t, alice, "#chat")
	joinChannels(t, bob, "#chat")

	t.Run("PRIVMSG and NOTICE reach the other member", func(t *testing.T) {
		sendLines(t, alice, "PRIVMSG #Chat :hello bob", "NOTICE #chat :a notice")
		m := expectFrom(t, bob, "chatalice", "PRIVMSG")
		if strings.Join(m.Params, "|") != "#chat|hello bob" || m.Source != "chatalice!chatalice@guest.palaver" {
			t.Fatalf("PRIVMSG = %q", m.String())
		}
		if len(m.Tags) != 0 {
			t.Fatalf("a client without caps got tags: %q", m.String())
		}
		expectFrom(t, bob, "chatalice", "NOTICE", "#chat", "a notice")
		// Without echo-message the sender gets nothing back.
		refuteMsg(t, drain(t, alice), "PRIVMSG")
	})

	t.Run("+n refuses outsiders", func(t *testing.T) {
		sendLines(t, outsider, "PRIVMSG #chat :let me in")
		expectParams(t, outsider, "404", "chatout", "#chat", "Cannot send to channel (+n)")
		sendLines(t, outsider, "NOTICE #chat :quietly")
		refuteMsg(t, drain(t, outsider), "404")
		refuteMsg(t, drain(t, bob), "PRIVMSG", "let me in")
	})

	t.Run("+m refuses the unvoiced and lets voiced users speak", func(t *testing.T) {
		sendLines(t, alice, "MODE #chat +m")
		expectFrom(t, bob, "chatalice", "MODE", "#chat", "+m")
		sendLines(t, bob, "PRIVMSG #chat :can I speak")
		expectParams(t, bob, "404", "chatbob", "#chat", "Cannot send to channel (+m)")
		sendLines(t, alice, "PRIVMSG #chat :ops may")
		expectFrom(t, bob, "chatalice", "PRIVMSG", "ops may")
		sendLines(t, alice, "MODE #chat +v chatbob")
		expectFrom(t, bob, "chatalice", "MODE", "#chat", "+v", "chatbob")
		sendLines(t, bob, "PRIVMSG #chat :now I can")
		expectFrom(t, alice, "chatbob", "PRIVMSG", "#chat", "now I can")
		sendLines(t, alice, "MODE #chat -m")
		expectFrom(t, bob, "chatalice", "MODE", "#chat", "-m")
	})

	t.Run("a banned member cannot speak, +E refuses plaintext", func(t *testing.T) {
		sendLines(t, alice, "MODE #chat +b chatbob!*@*")
		expectFrom(t, bob, "chatalice", "MODE", "#chat", "+b", "chatbob!*@*")
		sendLines(t, alice, "MODE #chat -v chatbob")
		expectFrom(t, bob, "chatalice", "MODE", "#chat", "-v", "chatbob")
		sendLines(t, bob, "PRIVMSG #chat :still here")
		expectParams(t, bob, "404", "chatbob", "#chat", "Cannot send to channel (+b)")
		sendLines(t, alice, "MODE #chat -b+E chatbob!*@*")
		expectFrom(t, bob, "chatalice", "MODE", "#chat", "-b+E", "chatbob!*@*")
		sendLines(t, bob, "PRIVMSG #chat :plain words")
		expect(t, bob, "404", "#chat", "+E")
		sendLines(t, bob, "PRIVMSG #chat :ENC:opaque")
		expectFrom(t, alice, "chatbob", "PRIVMSG", "#chat", "ENC:opaque")
		sendLines(t, alice, "MODE #chat -E")
		expectFrom(t, bob, "chatalice", "MODE", "#chat", "-E")
	})

	t.Run("NICK and QUIT reach channel peers", func(t *testing.T) {
		c, _ := guest(t, n, "chatleaver")
		joinChannels(t, c, "#chat")
		sendLines(t, c, "NICK chatrenamed")
		m := expectFrom(t, bob, "chatleaver", "NICK")
		if strings.Join(m.Params, "|") != "chatrenamed" {
			t.Fatalf("NICK = %q", m.String())
		}
		expectFrom(t, c, "chatleaver", "NICK", "chatrenamed")
		sendLines(t, c, "QUIT :see you")
		expect(t, c, "ERROR")
		q := expectFrom(t, bob, "chatrenamed", "QUIT")
		if strings.Join(q.Params, "|") != "Quit: see you" {
			t.Fatalf("QUIT = %q", q.String())
		}
	})

	t.Run("UTF8ONLY: invalid UTF-8 is never relayed", func(t *testing.T) {
		sendLines(t, alice, "PRIVMSG #chat :bad \xff\xfe bytes", "NOTICE #chat :bad \xc3 notice", "PRIVMSG #chat :utf8 after")
		expectFrom(t, bob, "chatalice", "PRIVMSG", "utf8 after")
		for _, m := range bob.Seen() {
			if !utf8.ValidString(m.String()) {
				t.Fatalf("relayed invalid UTF-8: %q", m.String())
			}
		}
		// The sender is told (FAIL or WARN INVALID_UTF8) when its message is refused or changed.
		msgs := drain(t, alice)
		if _, ok := findMsg(msgs, "FAIL", "PRIVMSG", "INVALID_UTF8"); !ok {
			if _, ok := findMsg(msgs, "WARN", "PRIVMSG", "INVALID_UTF8"); !ok {
				t.Fatalf("no INVALID_UTF8 reply: %q", lines(msgs))
			}
		}
	})

	t.Run("errors", func(t *testing.T) {
		sendLines(t, alice, "PRIVMSG #nosuchchannel :x")
		expectParams(t, alice, "403", "chatalice", "#nosuchchannel", "No such channel")
		sendLines(t, alice, "PRIVMSG")
		expect(t, alice, "411")
		sendLines(t, alice, "PRIVMSG #chat")
		expect(t, alice, "412")
		sendLines(t, alice, "PRIVMSG a,b,c,d,e :x")
		expect(t, alice, "407")
	})
}

// TestIRCMessageTags checks msgid, server-time, account-tag, echo-message and client-only tags.
func TestIRCMessageTags(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	sender, sres := login(t, n, "tagsender", "echo-message", "server-time")
	tagged, _ := guest(t, n, "tagfull", "message-tags", "server-time", "account-tag")
	timeOnly, _ := guest(t, n, "tagtime", "server-time")
	plain, _ := guest(t, n, "tagplain")
	joinChannels(t, sender, "#tags")
	joinChannels(t, tagged, "#tags")
	joinChannels(t, timeOnly, "#tags")
	joinChannels(t, plain, "#tags")

	t.Run("every copy carries the same msgid, server-time and account as negotiated", func(t *testing.T) {
		before := time.Now().Add(-time.Second)
		sendLines(t, sender, "PRIVMSG #tags :first")
		echo := expectFrom(t, sender, "tagsender", "PRIVMSG", "#tags", "first")
		full := expectFrom(t, tagged, "tagsender", "PRIVMSG", "#tags", "first")
		tonly := expectFrom(t, timeOnly, "tagsender", "PRIVMSG", "#tags", "first")
		bare := expectFrom(t, plain, "tagsender", "PRIVMSG", "#tags", "first")

		id := echo.Tags["msgid"]
		if id == "" || full.Tags["msgid"] != id {
			t.Fatalf("echo msgid %q, recipient msgid %q: want the same, non-empty", id, full.Tags["msgid"])
		}
		if _, ok := echo.Tags["account"]; ok {
			t.Errorf("the sender did not ask for account-tag but got %q", echo.String())
		}
		if full.Tags["account"] != sres.DID {
			t.Errorf("account tag %q, want %q", full.Tags["account"], sres.DID)
		}
		for _, m := range []ircmsg.Message{echo, full, tonly} {
			ts, err := time.Parse("2006-01-02T15:04:05.000Z", m.Tags["time"])
			if err != nil || ts.Before(before) || ts.After(time.Now().Add(time.Second)) {
				t.Errorf("time tag of %q: %v", m.String(), err)
			}
		}
		if len(tonly.Tags) != 1 {
			t.Errorf("a server-time-only client got %q, want only the time tag", tonly.String())
		}
		if len(bare.Tags) != 0 {
			t.Errorf("a client without caps got tags: %q", bare.String())
		}
	})

	t.Run("msgid is on every delivered message and unique", func(t *testing.T) {
		sendLines(t, sender, "NOTICE #tags :a notice", "PRIVMSG tagfull :direct", "NOTICE tagfull :direct notice")
		ids := map[string]bool{}
		for _, want := range []struct{ cmd, text string }{{"NOTICE", "a notice"}, {"PRIVMSG", "direct"}, {"NOTICE", "direct notice"}} {
			m := expectFrom(t, tagged, "tagsender", want.cmd, want.text)
			id := m.Tags["msgid"]
			if id == "" || ids[id] {
				t.Fatalf("msgid %q on %q: want a fresh one", id, m.String())
			}
			ids[id] = true
			e := expectFrom(t, sender, "tagsender", want.cmd, want.text)
			if e.Tags["msgid"] != id {
				t.Fatalf("echo msgid %q, delivered %q", e.Tags["msgid"], id)
			}
		}
	})

	t.Run("client-only tags are relayed, server tags are not", func(t *testing.T) {
		sendLines(t, sender, "@+draft/react=\\sthumbs;account=did:plc:forged;time=2001-01-01T00:00:00.000Z;msgid=forged;batch=x PRIVMSG #tags :spoof")
		full := expectFrom(t, tagged, "tagsender", "PRIVMSG", "spoof")
		if full.Tags["+draft/react"] != " thumbs" {
			t.Errorf("client tag not relayed: %q", full.String())
		}
		if full.Tags["account"] != sres.DID || full.Tags["msgid"] == "forged" || strings.HasPrefix(full.Tags["time"], "2001") {
			t.Errorf("client-supplied server tags leaked: %q", full.String())
		}
		if _, ok := full.Tags["batch"]; ok {
			t.Errorf("client batch tag relayed: %q", full.String())
		}
		tonly := expectFrom(t, timeOnly, "tagsender", "PRIVMSG", "spoof")
		if _, ok := tonly.Tags["+draft/react"]; ok || len(tonly.Tags) != 1 {
			t.Errorf("a client without message-tags got %q", tonly.String())
		}
		bare := expectFrom(t, plain, "tagsender", "PRIVMSG", "spoof")
		if len(bare.Tags) != 0 {
			t.Errorf("a client without caps got %q", bare.String())
		}
		// A guest cannot claim an account.
		g, _ := guest(t, n, "tagguest", "message-tags")
		joinChannels(t, g, "#tags")
		sendLines(t, g, "@account=did:plc:spoofed PRIVMSG #tags :not me")
		m := expectFrom(t, tagged, "tagguest", "PRIVMSG", "not me")
		if _, ok := m.Tags["account"]; ok {
			t.Errorf("a guest's message carries an account: %q", m.String())
		}
	})

	t.Run("TAGMSG reaches message-tags clients only", func(t *testing.T) {
		sendLines(t, sender, "@+typing=active TAGMSG #tags")
		m := expectFrom(t, tagged, "tagsender", "TAGMSG", "#tags")
		if m.Tags["+typing"] != "active" || m.Tags["msgid"] == "" {
			t.Fatalf("TAGMSG = %q", m.String())
		}
		expectFrom(t, sender, "tagsender", "TAGMSG", "#tags")
		refuteMsg(t, drain(t, timeOnly), "TAGMSG")
		refuteMsg(t, drain(t, plain), "TAGMSG")
	})
}

func TestIRCPrivateMessages(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	bobKey := newEd25519(t)
	bob1, _ := loginAs(t, n, bobKey, "dmbob")
	bob2, _ := loginAs(t, n, bobKey, "dmbobphone")
	alice, _ := guest(t, n, "dmalice")

	t.Run("by nick and by DID to every session of the DID", func(t *testing.T) {
		sendLines(t, alice, "PRIVMSG dmbob :by nick")
		m1 := expectFrom(t, bob1, "dmalice", "PRIVMSG", "by nick")
		m2 := expectFrom(t, bob2, "dmalice", "PRIVMSG", "by nick")
		if m1.Param(0) != "dmbob" || m2.Param(0) != "dmbobphone" {
			t.Fatalf("targets %q and %q, want each session's own nick", m1.String(), m2.String())
		}
		sendLines(t, alice, "PRIVMSG "+bobKey.DID()+" :by did")
		expectFrom(t, bob1, "dmalice", "PRIVMSG", "by did")
		expectFrom(t, bob2, "dmalice", "PRIVMSG", "by did")
		sendLines(t, alice, "NOTICE dmbobphone :a notice")
		expectFrom(t, bob1, "dmalice", "NOTICE", "a notice")
		expectFrom(t, bob2, "dmalice", "NOTICE", "a notice")
		// A reply reaches the guest.
		sendLines(t, bob2, "PRIVMSG dmalice :hi back")
		m := expectFrom(t, alice, "dmbobphone", "PRIVMSG", "hi back")
		if m.Param(0) != "dmalice" {
			t.Fatalf("reply = %q", m.String())
		}
	})

	t.Run("401 for an unknown nick", func(t *testing.T) {
		sendLines(t, alice, "PRIVMSG nobodyhere :hello?")
		expectParams(t, alice, "401", "dmalice", "nobodyhere", "No such nick/channel")
		sendLines(t, alice, "NOTICE nobodyhere :hello?")
		refuteMsg(t, drain(t, alice), "401")
	})

	t.Run("AWAY, 301 and away-notify", func(t *testing.T) {
		watcher, _ := guest(t, n, "dmwatcher", "away-notify")
		unaware, _ := guest(t, n, "dmunaware")
		joinChannels(t, bob1, "#away")
		joinChannels(t, watcher, "#away")
		joinChannels(t, unaware, "#away")
		sendLines(t, bob1, "AWAY :out to lunch")
		expectParams(t, bob1, "306", "dmbob", "You have been marked as being away")
		aw := expectFrom(t, watcher, "dmbob", "AWAY")
		if strings.Join(aw.Params, "|") != "out to lunch" {
			t.Fatalf("away-notify = %q", aw.String())
		}
		sendLines(t, alice, "PRIVMSG dmbob :are you there")
		expectParams(t, alice, "301", "dmalice", "dmbob", "out to lunch")
		sendLines(t, alice, "NOTICE dmbob :no 301 for notices")
		refuteMsg(t, drain(t, alice), "301")
		sendLines(t, bob1, "AWAY")
		expectParams(t, bob1, "305", "dmbob", "You are no longer marked as being away")
		back := expectFrom(t, watcher, "dmbob", "AWAY")
		if len(back.Params) != 0 {
			t.Fatalf("back = %q, want AWAY without parameters", back.String())
		}
		refuteMsg(t, drain(t, unaware), "AWAY")
	})

	t.Run("away-notify reports an away user who joins", func(t *testing.T) {
		watcher, _ := guest(t, n, "dmwatcher2", "away-notify")
		joinChannels(t, watcher, "#awayjoin")
		sendLines(t, bob1, "AWAY :still out")
		expect(t, bob1, "306")
		sendLines(t, bob1, "JOIN #awayjoin")
		expectFrom(t, watcher, "dmbob", "JOIN", "#awayjoin")
		// The very next line, waited for (not drained behind a PING: the JOIN and the AWAY are two
		// deliveries, and a PING answered between them would end a drain early).
		next, err := watcher.Expect(testCtx(t), func(ircmsg.Message) bool { return true })
		if err != nil || next.Command != "AWAY" || !isFrom(next, "dmbob") || next.Param(0) != "still out" {
			t.Fatalf("after the JOIN got %q (%v), want AWAY :still out", next.String(), err)
		}
	})
}

func TestIRCAccountNotifyAndExtendedJoin(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	ext, _ := guest(t, n, "extwatch", "extended-join", "account-notify")
	plainWatch, _ := guest(t, n, "plainwatch")
	chanOp(t, ext, "#ext")
	joinChannels(t, plainWatch, "#ext")

	t.Run("extended-join carries the account and realname", func(t *testing.T) {
		didUser, res := login(t, n, "extdid")
		joinChannels(t, didUser, "#ext")
		m := expectFrom(t, ext, "extdid", "JOIN")
		if strings.Join(m.Params, "|") != "#ext|"+res.DID+"|extdid" {
			t.Fatalf("extended JOIN = %q", m.String())
		}
		g, _ := guest(t, n, "extguest")
		sendLines(t, g, "JOIN #ext")
		m = expectFrom(t, ext, "extguest", "JOIN")
		if strings.Join(m.Params, "|") != "#ext|*|extguest" {
			t.Fatalf("extended JOIN of a guest = %q", m.String())
		}
		p := expectFrom(t, plainWatch, "extguest", "JOIN")
		if strings.Join(p.Params, "|") != "#ext" {
			t.Fatalf("plain JOIN = %q", p.String())
		}
	})

	t.Run("account-notify when a registered guest authenticates", func(t *testing.T) {
		late, _ := guest(t, n, "lateauth")
		joinChannels(t, late, "#ext")
		s := newEd25519(t)
		res, err := late.AuthenticateSASL(testCtx(t), s)
		if err != nil {
			t.Fatalf("re-auth: %v", err)
		}
		m := expectFrom(t, ext, "lateauth", "ACCOUNT")
		if strings.Join(m.Params, "|") != res.DID {
			t.Fatalf("ACCOUNT = %q", m.String())
		}
		refuteMsg(t, drain(t, plainWatch), "ACCOUNT")
		// WHOIS now shows the account.
		sendLines(t, ext, "WHOIS lateauth")
		expectParams(t, ext, "330", "extwatch", "lateauth", res.DID, "is logged in as")
	})
}
