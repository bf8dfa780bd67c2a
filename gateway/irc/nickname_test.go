package irc

import (
	"testing"
	"unicode"
)

func TestNickProblem(t *testing.T) {
	tests := []struct {
		nick string
		ok   bool
	}{
		{"victim", true},
		{"Alice", true},
		{"héllo", true},
		{"日本語", true},
		{"vict\u0456m", true},   // well-formed: the confusable check refuses it near an owned nick
		{"victim\u200b", false}, // zero-width space
		{"\u200dvictim", false}, // zero-width joiner
		{"ab\u202ecd", false},   // right-to-left override
		{"ab\u2066cd", false},   // left-to-right isolate
		{"a\u00a0b", false},     // no-break space
		{"\ufeffab", false},     // byte order mark
		{"a\u0085b", false},     // C1 next line
		{"a\u0007b", false},     // C0 bell
		{"ｆｕｌｌ", false},         // fullwidth forms
		{"\u01c5ab", false},     // a compatibility digraph
		{"a\U000e0041", false},  // tag character
		{"", false},
		{"#chan", false},
		{"did:plc:x", false},
	}
	for _, tt := range tests {
		if got := nickProblem(tt.nick) == ""; got != tt.ok {
			t.Errorf("nickProblem(%+q) accepted = %v, want %v (%s)", tt.nick, got, tt.ok, nickProblem(tt.nick))
		}
	}
}

// FuzzNickProblem: an accepted nick is valid UTF-8 with no control, format or space characters.
func FuzzNickProblem(f *testing.F) {
	for _, s := range []string{"victim", "vict\u0456m", "a\u200bb", "ｆｕｌｌ", "日本語", "a\u0085"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, nick string) {
		if nickProblem(nick) != "" {
			return
		}
		for _, r := range nick {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.IsSpace(r) {
				t.Fatalf("accepted %+q with %U", nick, r)
			}
		}
	})
}
