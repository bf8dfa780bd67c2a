package ircmsg

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Message
	}{
		{"command only", "QUIT", Message{Command: "QUIT"}},
		{"lower-case command", "privmsg #c :hi", Message{Command: "PRIVMSG", Params: []string{"#c", "hi"}}},
		{"numeric", ":srv 001 nick :Welcome", Message{Source: "srv", Command: "001", Params: []string{"nick", "Welcome"}}},
		{"trailing CRLF tolerated", "PING x\r\n", Message{Command: "PING", Params: []string{"x"}}},
		{"trailing CR tolerated", "PING x\r", Message{Command: "PING", Params: []string{"x"}}},
		{"trailing LF tolerated", "PING x\n", Message{Command: "PING", Params: []string{"x"}}},
		{"leading and extra spaces", "   :n!u@h   PRIVMSG   #c   :hello  world ", Message{Source: "n!u@h", Command: "PRIVMSG", Params: []string{"#c", "hello  world "}}},
		{"trailing spaces after middles", "MODE #c +o  ", Message{Command: "MODE", Params: []string{"#c", "+o"}}},
		{"empty trailing", "TOPIC #c :", Message{Command: "TOPIC", Params: []string{"#c", ""}}},
		{"trailing starting with colon", "PRIVMSG #c ::)", Message{Command: "PRIVMSG", Params: []string{"#c", ":)"}}},
		{"colon inside middle", "CAP * LS a:b", Message{Command: "CAP", Params: []string{"*", "LS", "a:b"}}},
		{
			"tags",
			`@time=2024-01-01T00:00:00.000Z;msgid=abc;+draft/reply=x;flag :srv PRIVMSG #c :hi`,
			Message{
				Tags:    map[string]string{"time": "2024-01-01T00:00:00.000Z", "msgid": "abc", "+draft/reply": "x", "flag": ""},
				Source:  "srv",
				Command: "PRIVMSG",
				Params:  []string{"#c", "hi"},
			},
		},
		{"escaped tag value", `@k=a\sb\:c\\d\re\nf\x\ TAGMSG`, Message{Tags: map[string]string{"k": "a b;c\\d\re\nfx"}, Command: "TAGMSG"}},
		{"empty tag value", "@k=;j TAGMSG", Message{Tags: map[string]string{"k": "", "j": ""}, Command: "TAGMSG"}},
		{"repeated tag keeps last", "@k=1;k=2 TAGMSG", Message{Tags: map[string]string{"k": "2"}, Command: "TAGMSG"}},
		{"empty tag entries skipped", "@;a=1;; TAGMSG", Message{Tags: map[string]string{"a": "1"}, Command: "TAGMSG"}},
		{"empty tag section", "@ TAGMSG", Message{Command: "TAGMSG"}},
		{
			"fifteen params, the last takes the rest",
			"CMD 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16  17",
			Message{Command: "CMD", Params: []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15 16  17"}},
		},
		{
			"fifteenth param with colon",
			"CMD 1 2 3 4 5 6 7 8 9 10 11 12 13 14 :15 16",
			Message{Command: "CMD", Params: []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15 16"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.line)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.line, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%q)\n got  %#v\n want %#v", tt.line, got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		line string
		want error
	}{
		{"empty", "", ErrEmpty},
		{"only CRLF", "\r\n", ErrEmpty},
		{"only spaces", "    ", ErrEmpty},
		{"NUL", "PRIVMSG #c :a\x00b", ErrMalformed},
		{"bare CR inside", "PRIVMSG #c :a\rb", ErrMalformed},
		{"LF inside", "PRIVMSG #c :a\nb", ErrMalformed},
		{"two line endings", "PING\r\n\r\n", ErrMalformed},
		{"tags only", "@a=b", ErrMalformed},
		{"tags and spaces only", "@a=b   ", ErrMalformed},
		{"source only", ":srv", ErrMalformed},
		{"empty source", ": PING", ErrMalformed},
		{"tags and source only", "@a :srv ", ErrMalformed},
		{"command starting with @", "@ @", ErrMalformed},
		{"command starting with colon", ":srv :X", ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.line)
			if !errors.Is(err, tt.want) {
				t.Errorf("Parse(%q) error = %v, want %v", tt.line, err, tt.want)
			}
		})
	}
}

func TestParam(t *testing.T) {
	m := Message{Command: "X", Params: []string{"a", "b"}}
	for i, want := range map[int]string{-1: "", 0: "a", 1: "b", 2: ""} {
		if got := m.Param(i); got != want {
			t.Errorf("Param(%d) = %q, want %q", i, got, want)
		}
	}
}

func TestSetTag(t *testing.T) {
	var m Message
	m.SetTag("msgid", "1")
	m.SetTag("msgid", "2")
	if !reflect.DeepEqual(m.Tags, map[string]string{"msgid": "2"}) {
		t.Errorf("Tags = %v", m.Tags)
	}
}

func TestTagValueEscaping(t *testing.T) {
	tests := []struct{ raw, escaped string }{
		{"", ""},
		{"plain", "plain"},
		{"a b", `a\sb`},
		{"a;b", `a\:b`},
		{`a\b`, `a\\b`},
		{"a\r\nb", `a\r\nb`},
		{`; \` + "\r\n", `\:\s\\\r\n`},
	}
	for _, tt := range tests {
		if got := EscapeTagValue(tt.raw); got != tt.escaped {
			t.Errorf("EscapeTagValue(%q) = %q, want %q", tt.raw, got, tt.escaped)
		}
		if got := UnescapeTagValue(tt.escaped); got != tt.raw {
			t.Errorf("UnescapeTagValue(%q) = %q, want %q", tt.escaped, got, tt.raw)
		}
	}
	lenient := []struct{ in, want string }{
		{`abc\`, "abc"},
		{`\`, ""},
		{`\x\y`, "xy"},
		{`\\\`, `\`},
	}
	for _, tt := range lenient {
		if got := UnescapeTagValue(tt.in); got != tt.want {
			t.Errorf("UnescapeTagValue(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzParseRoundTrip(f *testing.F) {
	for _, seed := range []string{
		"PING :srv",
		"@time=2024-01-01T00:00:00.000Z;msgid=01HX;account=did:key:z6Mk :n!u@h PRIVMSG #c :hello world",
		`@k=a\sb\:c\\d\re\nf\x\ TAGMSG #c`,
		"CMD 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17",
		":s weird @cmd ::x",
		"@a;b=;;c=\\ :s 001 n :",
		"  privmsg   #c   x  ",
		"@ X",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		m, err := Parse(line)
		if err != nil {
			return
		}
		wire := m.String()
		again, err := Parse(wire)
		if err != nil {
			t.Fatalf("Parse(%q) -> %q: reparse failed: %v", line, wire, err)
		}
		if !reflect.DeepEqual(m, again) {
			t.Fatalf("round trip mismatch for %q via %q:\n first  %#v\n second %#v", line, wire, m, again)
		}
		if strings.ContainsAny(wire, "\x00\r\n") {
			t.Fatalf("String() of %q contains a line break: %q", line, wire)
		}
	})
}

func FuzzUnescapeEscape(f *testing.F) {
	for _, seed := range []string{"", "a b;c\\d\r\n", `\s\:\\`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if got := UnescapeTagValue(EscapeTagValue(v)); got != v {
			t.Fatalf("Unescape(Escape(%q)) = %q", v, got)
		}
	})
}
