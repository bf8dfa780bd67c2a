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
		{"without the capability: one line each, the msgid on the first", msg("one\n\nthree"), all, []string{
			"@msgid=M1;time=2026-01-01T00:00:00.000Z :a!u@h PRIVMSG #c :one",
			"@time=2026-01-01T00:00:00.000Z :a!u@h PRIVMSG #c :",
			"@time=2026-01-01T00:00:00.000Z :a!u@h PRIVMSG #c :three",
		}},
		{"multiline without batch falls back", msg("one\ntwo"), capMultiline, []string{":a!u@h PRIVMSG #c :one", ":a!u@h PRIVMSG #c :two"}},
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
