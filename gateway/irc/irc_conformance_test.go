package irc_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// IRC behaviour checked against the specifications (modern.ircdocs.horse, ircv3.net). Each case
// sends what a conformance suite sends and checks the numerics the specification asks for.

func TestIRCNumericsFromTheSpecification(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	me, _ := guest(t, n, "coolnick")
	other, _ := guest(t, n, "coolnifty")
	joinChannels(t, me, "#conf-a", "#conf-b", "#conf-inv")
	joinChannels(t, other, "#conf-a", "#conf-b")
	sendLines(t, me, "MODE #conf-inv +i")
	expect(t, me, "MODE", "#conf-inv", "+i")

	cases := []struct {
		name  string
		lines []string
		end   string // the numeric or command that ends the answer
		check func(t *testing.T, msgs []ircmsg.Message)
	}{
		{"NAMES of a +i channel uses =", []string{"NAMES #conf-inv"}, "366", func(t *testing.T, msgs []ircmsg.Message) {
			if m, ok := findMsg(msgs, "353", "#conf-inv"); !ok || m.Param(1) != "=" {
				t.Fatalf("353 = %v", lines(msgs))
			}
		}},
		{"WHO host is shaped like a host name", []string{"WHO coolnick"}, "315", func(t *testing.T, msgs []ircmsg.Message) {
			m, ok := findMsg(msgs, "352", "coolnick")
			if !ok || strings.Contains(m.Param(3), "/") || !regexp.MustCompile(`^[A-Za-z0-9.-]+$`).MatchString(m.Param(3)) {
				t.Fatalf("352 = %v", lines(msgs))
			}
		}},
		{"WHO with a wildcard mask", []string{"WHO coolni*"}, "315", func(t *testing.T, msgs []ircmsg.Message) {
			if _, ok := findMsg(msgs, "352", "coolnick"); !ok {
				t.Fatalf("no 352 for coolnick: %v", lines(msgs))
			}
			if _, ok := findMsg(msgs, "352", "coolnifty"); !ok {
				t.Fatalf("no 352 for coolnifty: %v", lines(msgs))
			}
			if end, _ := findMsg(msgs, "315"); end.Param(1) != "coolni*" {
				t.Fatalf("315 = %v", end.String())
			}
		}},
		{"WHO *", []string{"WHO *"}, "315", func(t *testing.T, msgs []ircmsg.Message) {
			if _, ok := findMsg(msgs, "352", "coolnifty"); !ok {
				t.Fatalf("no 352 for coolnifty: %v", lines(msgs))
			}
		}},
		{"WHOX fields and token", []string{"WHO coolnifty %tcuhnfar,123"}, "315", func(t *testing.T, msgs []ircmsg.Message) {
			m, ok := findMsg(msgs, "354")
			// 354 <me> <token> <channel> <user> <host> <nick> <flags> <account> :<realname>
			if !ok || len(m.Params) != 9 || m.Param(1) != "123" || m.Param(5) != "coolnifty" || m.Param(6) != "H" || m.Param(7) != "0" {
				t.Fatalf("354 = %v", lines(msgs))
			}
		}},
		{"ISUPPORT advertises EXCEPTS, EXTBAN and WHOX", []string{"VERSION"}, "PONG", func(t *testing.T, msgs []ircmsg.Message) {
			var tokens []string
			for _, m := range msgs {
				if m.Command == "005" {
					tokens = append(tokens, m.Params[1:len(m.Params)-1]...)
				}
			}
			joined := " " + strings.Join(tokens, " ") + " "
			if !strings.Contains(joined, " EXCEPTS=e ") || !strings.Contains(joined, " EXTBAN=,m ") || !strings.Contains(joined, " WHOX ") {
				t.Fatalf("ISUPPORT %v", tokens)
			}
		}},
		{"empty PRIVMSG gets 412", []string{"PRIVMSG coolnifty :"}, "PONG", func(t *testing.T, msgs []ircmsg.Message) {
			if _, ok := findMsg(msgs, "412"); !ok {
				t.Fatalf("no 412: %v", lines(msgs))
			}
		}},
		{"over-long tag data gets 417", []string{"@+x=" + strings.Repeat("a", 4100) + " PRIVMSG coolnifty :hi"}, "PONG", func(t *testing.T, msgs []ircmsg.Message) {
			if _, ok := findMsg(msgs, "417"); !ok {
				t.Fatalf("no 417: %v", lines(msgs))
			}
			refuteMsg(t, msgs, "FAIL")
		}},
		{"KILL by a non-operator gets 481", []string{"KILL coolnifty :bye"}, "PONG", func(t *testing.T, msgs []ircmsg.Message) {
			if _, ok := findMsg(msgs, "481"); !ok {
				t.Fatalf("no 481: %v", lines(msgs))
			}
		}},
		{"INFO", []string{"INFO"}, "374", func(t *testing.T, msgs []ircmsg.Message) {
			if _, ok := findMsg(msgs, "371"); !ok {
				t.Fatalf("no 371: %v", lines(msgs))
			}
		}},
		{"696 does not echo a refused key", []string{"MODE #conf-a +k " + strings.Repeat("k", 80)}, "PONG", func(t *testing.T, msgs []ircmsg.Message) {
			m, ok := findMsg(msgs, "696", "#conf-a")
			if !ok || strings.Contains(m.String(), "kkkkkkkk") {
				t.Fatalf("696 = %v", lines(msgs))
			}
		}},
		{"KICK with lists of channels and users", []string{"KICK #conf-a,#conf-b coolnifty,coolnifty :out"}, "PONG", func(t *testing.T, msgs []ircmsg.Message) {
			if _, ok := findMsg(msgs, "KICK", "#conf-a", "coolnifty"); !ok {
				t.Fatalf("no KICK from #conf-a: %v", lines(msgs))
			}
			if _, ok := findMsg(msgs, "KICK", "#conf-b", "coolnifty"); !ok {
				t.Fatalf("no KICK from #conf-b: %v", lines(msgs))
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sendLines(t, me, tc.lines...)
			var msgs []ircmsg.Message
			if tc.end == "PONG" {
				msgs = drain(t, me)
			} else {
				msgs = readUntil(t, me, tc.end, func(m ircmsg.Message) bool { return m.Command == tc.end })
			}
			tc.check(t, msgs)
		})
	}
}

func TestIRCLUSERSCountsAndTexts(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	a, _ := guest(t, n, "lusera")
	b, _ := guest(t, n, "luserb")
	joinChannels(t, a, "#lusers-one", "#lusers-gone")
	joinChannels(t, b, "#lusers-one")
	sendLines(t, a, "PART #lusers-gone") // empty now: neither listed nor counted
	expect(t, a, "PART", "#lusers-gone")
	sendLines(t, b, "LIST")
	listed := 0
	for _, m := range readUntil(t, b, "323", func(m ircmsg.Message) bool { return m.Command == "323" }) {
		if m.Command == "322" {
			listed++
		}
	}
	sendLines(t, b, "LUSERS")
	msgs := readUntil(t, b, "266", func(m ircmsg.Message) bool { return m.Command == "266" })
	want := map[string]*regexp.Regexp{
		"251": regexp.MustCompile(`^There are 2 users and 0 invisible on 1 servers$`),
		"255": regexp.MustCompile(`^I have 2 clients and 0 servers$`),
		"265": regexp.MustCompile(`^Current local users 2, max \d+$`),
		"266": regexp.MustCompile(`^Current global users 2, max \d+$`),
	}
	for code, re := range want {
		m, ok := findMsg(msgs, code)
		if !ok || !re.MatchString(m.Params[len(m.Params)-1]) {
			t.Fatalf("%s = %q in %v", code, m.String(), lines(msgs))
		}
	}
	if m, _ := findMsg(msgs, "265"); len(m.Params) != 4 || m.Param(1) != "2" {
		t.Fatalf("265 = %q", m.String())
	}
	if m, ok := findMsg(msgs, "254"); !ok || m.Param(1) != strconv.Itoa(listed) || listed != 1 {
		t.Fatalf("254 = %q, LIST showed %d channels", m.String(), listed)
	}
}

func TestIRCRegistrationAndHistoryOfNicks(t *testing.T) {
	n := startNode(t, t.TempDir(), func(c *Config) { c.Opers = map[string]string{"admin": "hunter2"} })
	t.Run("USER with an empty realname gets 461", func(t *testing.T) {
		c := dial(t, n)
		sendLines(t, c, "NICK emptyreal", "USER u * * :")
		expect(t, c, "461", "USER")
		sendLines(t, c, "USER u * * :Real Name")
		expect(t, c, "001")
	})
	t.Run("WHOWAS", func(t *testing.T) {
		gone, _ := guest(t, n, "leaver")
		asker, _ := guest(t, n, "asker")
		sendLines(t, gone, "QUIT :bye")
		sessionGone(t, n, "leaver")
		sendLines(t, asker, "WHOWAS leaver", "WHOWAS neverseen")
		msgs := readUntil(t, asker, "369 neverseen", func(m ircmsg.Message) bool { return m.Command == "369" && m.Param(1) == "neverseen" })
		if m, ok := findMsg(msgs, "314", "leaver"); !ok || m.Param(3) != "guest.palaver" {
			t.Fatalf("314 = %v", lines(msgs))
		}
		if _, ok := findMsg(msgs, "369", "leaver"); !ok {
			t.Fatalf("no 369 for leaver: %v", lines(msgs))
		}
		if _, ok := findMsg(msgs, "406", "neverseen"); !ok {
			t.Fatalf("no 406: %v", lines(msgs))
		}
	})
	t.Run("KILL by an operator", func(t *testing.T) {
		victim, _ := guest(t, n, "victim")
		killer, _ := guest(t, n, "killer")
		sendLines(t, killer, "OPER admin hunter2")
		expect(t, killer, "381")
		sendLines(t, killer, "KILL victim :enough")
		expect(t, victim, "ERROR", "Killed (killer (enough))")
		sessionGone(t, n, "victim")
	})
}

func TestIRCChannelLimitAndSecretModes(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	op, _ := guest(t, n, "limitop")
	second, _ := guest(t, n, "limitsecond")
	outsider, _ := guest(t, n, "limitout")
	joinChannels(t, op, "#limited", "#secret")

	t.Run("+l", func(t *testing.T) {
		sendLines(t, op, "MODE #limited +l 1")
		expect(t, op, "MODE", "#limited", "+l", "1")
		sendLines(t, op, "MODE #limited")
		expectParams(t, op, "324", "limitop", "#limited", "+ntl", "1")
		sendLines(t, second, "JOIN #limited")
		expect(t, second, "471", "#limited")
		sendLines(t, op, "MODE #limited +l notanumber")
		expect(t, op, "696", "#limited", "l")
		sendLines(t, op, "MODE #limited -l")
		expect(t, op, "MODE", "#limited", "-l")
		sendLines(t, second, "JOIN #limited")
		expect(t, second, "366", "#limited")
	})
	t.Run("+s", func(t *testing.T) {
		sendLines(t, op, "MODE #secret +s")
		expect(t, op, "MODE", "#secret", "+s")
		sendLines(t, op, "NAMES #secret")
		if names := expect(t, op, "353", "#secret"); names.Param(1) != "@" {
			t.Fatalf("353 = %q", names.String())
		}
		sendLines(t, outsider, "LIST")
		msgs := readUntil(t, outsider, "323", func(m ircmsg.Message) bool { return m.Command == "323" })
		refuteMsg(t, msgs, "322", "#secret")
		sendLines(t, op, "LIST")
		msgs = readUntil(t, op, "323", func(m ircmsg.Message) bool { return m.Command == "323" })
		if _, ok := findMsg(msgs, "322", "#secret"); !ok {
			t.Fatalf("a member's LIST lacks the secret channel: %v", lines(msgs))
		}
	})
}

func TestIRCHelp(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	c, _ := guest(t, n, "helper")
	drain(t, c) // the welcome
	cases := []struct {
		line, end string
		want      []string // numerics, in order
	}{
		{"HELP", "706", []string{"704", "705", "706"}},
		{"HELPOP privmsg", "706", []string{"704", "705", "706"}},
		{"HELP NOSUCHTHING", "524", []string{"524"}},
	}
	for _, tc := range cases {
		t.Run(tc.line, func(t *testing.T) {
			sendLines(t, c, tc.line)
			msgs := readUntil(t, c, tc.end, func(m ircmsg.Message) bool { return m.Command == tc.end })
			if got := strings.Join(commandsOf(msgs), " "); got != strings.Join(tc.want, " ") {
				t.Fatalf("%s: %s", tc.line, got)
			}
		})
	}
}

// TestIRCRedact: REDACT (draft/message-redaction) deletes like +draft/delete, and a client with the
// capability is told of every delete as REDACT.
func TestIRCRedact(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	author, _ := guest(t, n, "redauthor", "message-tags", "echo-message", "draft/message-redaction")
	modern, _ := guest(t, n, "redmodern", "message-tags", "draft/message-redaction")
	older, _ := guest(t, n, "redolder", "message-tags")
	joinChannels(t, author, "#redact")
	joinChannels(t, modern, "#redact")
	joinChannels(t, older, "#redact")
	sendLines(t, author, "PRIVMSG #redact :regrettable")
	msgid := expectFrom(t, author, "redauthor", "PRIVMSG", "regrettable").Tags["msgid"]
	expect(t, older, "PRIVMSG", "regrettable")

	sendLines(t, modern, "REDACT #redact "+msgid+" :not yours")
	expect(t, modern, "FAIL", "REDACT", "REDACT_FORBIDDEN", msgid)
	sendLines(t, author, "REDACT #redact 01ARZ3NDEKTSV4RRFFQ69G5FAV")
	expect(t, author, "FAIL", "REDACT", "UNKNOWN_MSGID")

	sendLines(t, author, "REDACT #redact "+msgid)
	expectParams(t, modern, "REDACT", "#redact", msgid)
	if del := expect(t, older, "TAGMSG", "#redact"); del.Tags["+draft/delete"] != msgid {
		t.Fatalf("delete for a client without the capability: %q", del.String())
	}
	resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/api/v1/channels/redact/history", "", nil)
	if resp.StatusCode != 200 || strings.Contains(string(body), "regrettable") {
		t.Fatalf("history after REDACT = %d %s", resp.StatusCode, body)
	}

	t.Run("the reason is relayed", func(t *testing.T) {
		sendLines(t, author, "PRIVMSG #redact :wrong channel")
		id := expectFrom(t, author, "redauthor", "PRIVMSG", "wrong channel").Tags["msgid"]
		sendLines(t, author, "REDACT #redact "+id+" :wrong channel, sorry")
		expectParams(t, author, "REDACT", "#redact", id, "wrong channel, sorry")
		expectParams(t, modern, "REDACT", "#redact", id, "wrong channel, sorry")
		if del := expect(t, older, "TAGMSG", "#redact"); len(del.Tags) != 2 || del.Tags["+draft/delete"] != id || del.Tags["msgid"] == "" {
			t.Fatalf("delete for a client without the capability: %q", del.String())
		}
	})
	t.Run("a target one cannot delete in", func(t *testing.T) {
		for _, target := range []string{"#nowhere", "#redact-elsewhere", "nobodyhere"} {
			if target == "#redact-elsewhere" {
				joinChannels(t, older, target)
			}
			sendLines(t, author, "REDACT "+target+" "+msgid)
			// FAIL REDACT INVALID_TARGET <target> :text
			if m := expect(t, author, "FAIL", "REDACT"); len(m.Params) != 4 || m.Param(1) != "INVALID_TARGET" || m.Param(2) != target {
				t.Fatalf("REDACT %s: %q", target, m.String())
			}
		}
	})
	t.Run("a react tag without +reply is an ordinary TAGMSG", func(t *testing.T) {
		sendLines(t, author, "@+draft/react=👍 TAGMSG #redact")
		echo := expectFrom(t, author, "redauthor", "TAGMSG", "#redact")
		if echo.Tags["+draft/react"] != "👍" || echo.Tags["msgid"] == "" {
			t.Fatalf("echo %q", echo.String())
		}
		if got := expectFrom(t, modern, "redauthor", "TAGMSG", "#redact"); got.Tags["msgid"] != echo.Tags["msgid"] {
			t.Fatalf("relayed %q", got.String())
		}
	})
}

// TestIRCSetname: SETNAME (setname) changes the real name everywhere and tells the clients with the
// capability that share a channel, the sender included.
func TestIRCSetname(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	setter, _ := guest(t, n, "namesetter", "setname")
	watcher, _ := guest(t, n, "namewatcher", "setname")
	other, _ := guest(t, n, "nameother")
	joinChannels(t, setter, "#names")
	joinChannels(t, watcher, "#names")
	joinChannels(t, other, "#names")
	sendLines(t, setter, "SETNAME :A New Name")
	expectFrom(t, setter, "namesetter", "SETNAME", "A New Name")
	expectFrom(t, watcher, "namesetter", "SETNAME", "A New Name")
	refuteMsg(t, drain(t, other), "SETNAME")
	sendLines(t, other, "WHOIS namesetter")
	if m := expect(t, other, "311", "namesetter"); m.Param(5) != "A New Name" {
		t.Fatalf("311 = %q", m.String())
	}
	sendLines(t, setter, "SETNAME :"+strings.Repeat("n", 200))
	expect(t, setter, "FAIL", "SETNAME", "INVALID_REALNAME")
}

// TestIRCBotMode: user mode +B (bot-mode, ISUPPORT BOT=B) shows in MODE, WHOIS (335) and WHO.
func TestIRCBotMode(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	bot, _ := guest(t, n, "helperbot")
	asker, _ := guest(t, n, "botasker")
	sendLines(t, bot, "VERSION")
	expect(t, bot, "005", "BOT=B")
	sendLines(t, bot, "MODE helperbot +B")
	expectParams(t, bot, "MODE", "helperbot", "+B")
	sendLines(t, bot, "MODE helperbot")
	expectParams(t, bot, "221", "helperbot", "+B")
	sendLines(t, asker, "WHOIS helperbot")
	expect(t, asker, "335", "helperbot")
	sendLines(t, asker, "WHO helperbot")
	if m := expect(t, asker, "352", "helperbot"); !strings.Contains(m.Param(6), "B") {
		t.Fatalf("352 flags = %q", m.String())
	}
	sendLines(t, bot, "MODE helperbot -B", "MODE helperbot")
	expectParams(t, bot, "221", "helperbot", "+")
}

// TestIRCNoCTCPMode: channel mode +C refuses CTCP requests (404) but lets ACTION and plain text by.
func TestIRCNoCTCPMode(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	op, _ := guest(t, n, "ctcpop")
	member, _ := guest(t, n, "ctcpmember")
	joinChannels(t, op, "#noctcp")
	joinChannels(t, member, "#noctcp")
	sendLines(t, op, "MODE #noctcp +C")
	expect(t, op, "MODE", "#noctcp", "+C")
	cases := []struct {
		text    string
		refused bool
	}{
		{"\x01VERSION\x01", true},
		{"\x01PING 123\x01", true},
		{"\x01ACTION waves\x01", false},
		{"plain words", false},
	}
	for _, tc := range cases {
		sendLines(t, member, "PRIVMSG #noctcp :"+tc.text)
		msgs := drain(t, member)
		_, refused := findMsg(msgs, "404", "#noctcp", "+C")
		if refused != tc.refused {
			t.Fatalf("%q: refused %v, want %v (%v)", tc.text, refused, tc.refused, lines(msgs))
		}
		if !tc.refused {
			expectFrom(t, op, "ctcpmember", "PRIVMSG", tc.text)
		}
	}
}
