package rest

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseChannelName(t *testing.T) {
	tests := []struct {
		raw, want string
		err       bool
		dm        bool
	}{
		{raw: "#Palaver", want: "#palaver"},
		{raw: "palaver", want: "#palaver"},
		{raw: "PaLaVeR", want: "#palaver"},
		{raw: "&Local", want: "&local"},
		{raw: "#a/b", want: "#a/b"},
		{raw: "#Ünï", want: "#Ünï"}, // ascii casemapping: only A-Z fold
		{raw: "#" + strings.Repeat("x", 63), want: "#" + strings.Repeat("x", 63)},
		{raw: strings.Repeat("x", 63), want: "#" + strings.Repeat("x", 63)},
		{raw: strings.Repeat("x", 64), err: true}, // 65 with the added '#'
		{raw: "#" + strings.Repeat("x", 64), err: true},
		{raw: "", err: true},
		{raw: "#", err: true},
		{raw: "&", err: true},
		{raw: "a b", err: true},
		{raw: "a,b", err: true},
		{raw: "a\x00b", err: true},
		{raw: "a\tb", err: true},
		{raw: "a\x7fb", err: true},
		{raw: "#\xff\xfe", err: true},
		{raw: "dm:did:key:a,did:key:b", err: true, dm: true},
		{raw: "dm:x", err: true, dm: true},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := parseChannelName(tt.raw)
			if tt.err {
				if err == nil {
					t.Fatalf("parseChannelName(%q) = %q, want an error", tt.raw, got)
				}
				if errors.Is(err, errDirectMessages) != tt.dm {
					t.Fatalf("parseChannelName(%q): %v; DM error wanted: %v", tt.raw, err, tt.dm)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseChannelName(%q) = %q, %v; want %q", tt.raw, got, err, tt.want)
			}
		})
	}
}

func TestParseNick(t *testing.T) {
	for _, tt := range []struct {
		raw string
		ok  bool
	}{
		{"alice", true}, {"alice.bsky.social", true}, {"[Bot]|x", true}, {strings.Repeat("n", 64), true},
		{"", false}, {strings.Repeat("n", 65), false}, {"a b", false}, {"a,b", false}, {"a\x01", false}, {"\xc3", false},
	} {
		_, err := parseNick(tt.raw)
		if (err == nil) != tt.ok {
			t.Errorf("parseNick(%q) error %v, want ok=%v", tt.raw, err, tt.ok)
		}
	}
}

func TestParseLimit(t *testing.T) {
	l := pageLimits{def: 50, max: 200}
	tests := []struct {
		raw     string
		present bool
		want    int
		err     bool
	}{
		{"", false, 50, false},
		{"", true, 50, false},
		{"1", true, 1, false},
		{"200", true, 200, false},
		{"201", true, 200, false},
		{"+7", true, 7, false},
		{"007", true, 7, false},
		{"99999999999999999999999", true, 200, false},
		{"0", true, 0, true},
		{"-1", true, 0, true},
		{"-99999999999999999999999", true, 0, true},
		{"1.5", true, 0, true},
		{"1e3", true, 0, true},
		{"ten", true, 0, true},
		{" 5", true, 0, true},
		{"0x10", true, 0, true},
		{"+", true, 0, true},
	}
	for _, tt := range tests {
		got, err := parseLimit(tt.raw, tt.present, l)
		if (err != nil) != tt.err || (!tt.err && got != tt.want) {
			t.Errorf("parseLimit(%q, %v) = %d, %v; want %d, error %v", tt.raw, tt.present, got, err, tt.want, tt.err)
		}
	}
}

func TestParseBefore(t *testing.T) {
	tests := []struct {
		raw  string
		want cursor
		err  bool
	}{
		{"", cursor{}, false},
		{"0", cursor{kind: cursorUnix, unix: 0}, false},
		{"1700000000", cursor{kind: cursorUnix, unix: 1700000000}, false},
		{"99999999999999999999999", cursor{kind: cursorUnix, unix: maxUnix}, false},
		{"01ARZ3NDEKTSV4RRFFQ69G5FAV", cursor{kind: cursorMsgID, msgid: "01ARZ3NDEKTSV4RRFFQ69G5FAV"}, false},
		{"01arz3ndektsv4rrffq69g5fav", cursor{kind: cursorMsgID, msgid: "01ARZ3NDEKTSV4RRFFQ69G5FAV"}, false},
		{"01234567890123456789012345", cursor{kind: cursorMsgID, msgid: "01234567890123456789012345"}, false},
		{"-1", cursor{}, true},
		{"1.5", cursor{}, true},
		{"yesterday", cursor{}, true},
		{"81ARZ3NDEKTSV4RRFFQ69G5FAV", cursor{}, true}, // overflowing ULID time
		{"01ARZ3NDEKTSV4RRFFQ69G5FAU", cursor{}, true}, // U is not Crockford
		{"01ARZ3NDEKTSV4RRFFQ69G5FA", cursor{}, true},
	}
	for _, tt := range tests {
		got, err := parseBefore(tt.raw)
		if (err != nil) != tt.err || (!tt.err && got != tt.want) {
			t.Errorf("parseBefore(%q) = %+v, %v; want %+v, error %v", tt.raw, got, err, tt.want, tt.err)
		}
	}
}

func FuzzParseChannelName(f *testing.F) {
	for _, seed := range []string{"#a", "a", "&b", "dm:x", "#a b", "#\x00", strings.Repeat("x", 70), "#Ünï", "\xff"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		name, err := parseChannelName(raw)
		if err != nil {
			return
		}
		if len(name) < 2 || len(name) > 64 || (name[0] != '#' && name[0] != '&') || !utf8.ValidString(name) {
			t.Fatalf("parseChannelName(%q) accepted %q", raw, name)
		}
		if strings.ContainsAny(name, " ,\x00\r\n") || strings.HasPrefix(raw, "dm:") {
			t.Fatalf("parseChannelName(%q) accepted %q", raw, name)
		}
		if again, err := parseChannelName(name); err != nil || again != name {
			t.Fatalf("not idempotent: %q → %q → %q, %v", raw, name, again, err)
		}
	})
}

func FuzzParseNick(f *testing.F) {
	for _, seed := range []string{"alice", "", "a b", strings.Repeat("n", 65), "\x00"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		nick, err := parseNick(raw)
		if err == nil && (nick != raw || raw == "" || len(raw) > 64 || strings.ContainsAny(raw, " ,\x00")) {
			t.Fatalf("parseNick(%q) accepted %q", raw, nick)
		}
	})
}

func FuzzParsePaging(f *testing.F) {
	for _, seed := range [][2]string{{"50", "0"}, {"-1", "x"}, {"999999999999999999999", "01ARZ3NDEKTSV4RRFFQ69G5FAV"}, {"", ""}, {"+", "-"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, limit, before string) {
		l := pageLimits{def: 50, max: 200}
		n, err := parseLimit(limit, true, l)
		if err == nil && (n < 1 || n > l.max) {
			t.Fatalf("parseLimit(%q) = %d", limit, n)
		}
		c, err := parseBefore(before)
		if err != nil {
			return
		}
		switch c.kind {
		case cursorNone:
			if before != "" {
				t.Fatalf("parseBefore(%q) = none", before)
			}
		case cursorUnix:
			if c.unix < 0 {
				t.Fatalf("parseBefore(%q) = %d", before, c.unix)
			}
		case cursorMsgID:
			if !isULID(c.msgid) || c.msgid != strings.ToUpper(c.msgid) {
				t.Fatalf("parseBefore(%q) = msgid %q", before, c.msgid)
			}
		}
	})
}
