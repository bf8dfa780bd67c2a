package irc

import (
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

func TestOutMsgExpand(t *testing.T) {
	msg := func(text string) *outMsg {
		return &outMsg{msg: ircmsg.Message{Source: "a!u@h", Command: "PRIVMSG", Params: []string{"#c", text}, ForceTrailing: true},
			msgid: "M1", time: "2026-01-01T00:00:00.000Z"}
	}
	composed := func(text, offsets string) *outMsg {
		o := msg(text)
		o.clientTags = map[string]string{composedTag: offsets}
		return o
	}
	all := capMessageTags | capServerTime | capBatch
	cases := []struct {
		name string
		o    *outMsg
		caps capBits
		want []string
	}{
		{"one line", msg("hello"), all | capMultiline, []string{"@msgid=M1;time=2026-01-01T00:00:00.000Z :a!u@h PRIVMSG #c :hello"}},
		{"multiline batch", msg("one\ntwo"), all | capMultiline, []string{
			"@msgid=M1;time=2026-01-01T00:00:00.000Z :a!u@h BATCH +mlM1 draft/multiline #c",
			"@batch=mlM1 :a!u@h PRIVMSG #c :one",
			"@batch=mlM1 :a!u@h PRIVMSG #c :two",
			":a!u@h BATCH -mlM1",
		}},
		{"without the capability: one line each, blank lines left out", msg("one\n\nthree"), all, []string{
			"@msgid=M1;time=2026-01-01T00:00:00.000Z :a!u@h PRIVMSG #c :one",
			"@time=2026-01-01T00:00:00.000Z :a!u@h PRIVMSG #c :three",
		}},
		{"the msgid on the first line sent", msg("\ntwo\nthree"), all, []string{
			"@msgid=M1;time=2026-01-01T00:00:00.000Z :a!u@h PRIVMSG #c :two",
			"@time=2026-01-01T00:00:00.000Z :a!u@h PRIVMSG #c :three",
		}},
		{"multiline without batch falls back", msg("one\ntwo"), capMultiline, []string{":a!u@h PRIVMSG #c :one", ":a!u@h PRIVMSG #c :two"}},
		{"the sender's concat lines kept", composed("how is everyone?\nfine", "7"), all | capMultiline, []string{
			"@msgid=M1;time=2026-01-01T00:00:00.000Z :a!u@h BATCH +mlM1 draft/multiline #c",
			"@batch=mlM1 :a!u@h PRIVMSG #c :how is ",
			"@batch=mlM1;draft/multiline-concat :a!u@h PRIVMSG #c :everyone?",
			"@batch=mlM1 :a!u@h PRIVMSG #c :fine",
			":a!u@h BATCH -mlM1",
		}},
		{"concat lines as separate lines without the capability", composed("how is everyone?", "7"), all, []string{
			"@msgid=M1;time=2026-01-01T00:00:00.000Z :a!u@h PRIVMSG #c :how is ",
			"@time=2026-01-01T00:00:00.000Z :a!u@h PRIVMSG #c :everyone?",
		}},
		{"offsets that do not fit the text are ignored", composed("one\ntwo", "3"), all, []string{
			"@msgid=M1;time=2026-01-01T00:00:00.000Z :a!u@h PRIVMSG #c :one",
			"@time=2026-01-01T00:00:00.000Z :a!u@h PRIVMSG #c :two",
		}},
		// ":a!u@h PRIVMSG #c :" and CRLF leave 491 bytes of the 512: 98 words and a space.
		{"a line over the line limit is cut after a space", msg(strings.Repeat("word ", 120) + "\nend"), capMessageTags, []string{
			"@msgid=M1 :a!u@h PRIVMSG #c :" + strings.Repeat("word ", 98),
			":a!u@h PRIVMSG #c :" + strings.Repeat("word ", 22),
			":a!u@h PRIVMSG #c :end",
		}},
		{"a line without spaces is cut at a UTF-8 boundary", msg("é" + strings.Repeat("é", 300) + "\nend"), 0, []string{
			":a!u@h PRIVMSG #c :" + strings.Repeat("é", 245),
			":a!u@h PRIVMSG #c :" + strings.Repeat("é", 56),
			":a!u@h PRIVMSG #c :end",
		}},
		{"cut lines continue as concat lines with the capability", msg(strings.Repeat("ab", 250) + "\nend"), all | capMultiline, []string{
			"@msgid=M1;time=2026-01-01T00:00:00.000Z :a!u@h BATCH +mlM1 draft/multiline #c",
			"@batch=mlM1 :a!u@h PRIVMSG #c :" + strings.Repeat("ab", 245) + "a",
			"@batch=mlM1;draft/multiline-concat :a!u@h PRIVMSG #c :b" + strings.Repeat("ab", 4),
			"@batch=mlM1 :a!u@h PRIVMSG #c :end",
			":a!u@h BATCH -mlM1",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, m := range tc.o.expand(tc.caps) {
				got = append(got, m.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			wire := string(tc.o.bytesFor(tc.caps))
			if strings.Count(wire, "\r\n") != len(tc.want) {
				t.Fatalf("wire form %q", wire)
			}
		})
	}
}

// FuzzComposition: whatever the stored offsets say, the lines rebuild the text exactly (newlines
// between lines, nothing between a concat line and the one before) and none passes the budget.
func FuzzComposition(f *testing.F) {
	f.Add("how is everyone?\nfine", "7", 20)
	f.Add("one\ntwo", "3", 64)
	f.Add(strings.Repeat("é", 40), "1,2,9", 9)
	f.Add("", "", 1)
	f.Fuzz(func(t *testing.T, text, offsets string, budget int) {
		budget = 8 + abs(budget%600)
		lines := composition(text, parseOffsets(offsets, text), budget)
		var b strings.Builder
		for i, l := range lines {
			if len(l.text) > budget {
				t.Fatalf("line of %d bytes over a budget of %d", len(l.text), budget)
			}
			if i > 0 && !l.concat {
				b.WriteByte('\n')
			}
			if i == 0 && l.concat {
				t.Fatalf("the first line is a concat line")
			}
			b.WriteString(l.text)
		}
		if b.String() != text {
			t.Fatalf("rebuilt %q from %q", b.String(), text)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
