package fsm

import (
	"strings"
	"testing"
)

func TestFold(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"abc", "abc"},
		{"ABC", "abc"},
		{"#Chan", "#chan"},
		{"MiXeD123_-|", "mixed123_-|"},
		{`[]\~`, `[]\~`}, // ascii casemapping leaves the rfc1459 pairs alone
		{"ÉA", "Éa"},     // only A–Z fold, whatever else is in the string
		{"Éa", "Éa"},
		{"İX", "İx"},
		{"ΩMEGA", "Ωmega"},
		{"\xffA", "\xffa"},
	}
	for _, tc := range tests {
		if got := Fold(tc.in); got != tc.want {
			t.Errorf("Fold(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMatchMask(t *testing.T) {
	tests := []struct {
		mask, hostmask, did string
		want                bool
	}{
		{"*!*@*", "alice!u@h", "", true},
		{"*!*@*", "alice!u@h", didAlice, true},
		{"*", "", "", true},
		{"", "", "", true},
		{"", "a", "", false},
		{"ALICE!*@*", "alice!u@h", "", true},
		{"alice!*@*", "ALICE!U@H", "", true},
		{"a?ice!*@*", "alice!u@h", "", true},
		{"a?ice!*@*", "alce!u@h", "", false},
		{"*!*@*.example", "n!u@x.example", "", true},
		{"*!*@*.example", "n!u@x.example.com", "", false},
		{"bob!*@*", "alice!u@h", "", false},
		{"**a**", "bab", "", true},
		{"*a*b", "aXbXb", "", true},
		{"a*b*c", "abcbc", "", true},
		{"a*a", "a", "", false},
		{"?", "", "", false},
		{"??", "é", "", true}, // ? is one byte
		// A * in the subject is an ordinary byte; the pattern's * must still match it.
		{"*", "*a", "", true},
		{"a*", "a*b", "", true},
		{"*!*@*", "n!*x@h", "", true},
		{"*x", "**x", "", true},
		{"?*", "*", "", true},
		{"\\*", "\\x", "", true}, // no escapes: backslash is literal
		// did: masks match the authenticated DID exactly and never the hostmask.
		{didAlice, "did:plc:alice!u@h", "", false},
		{didAlice, "n!u@h", didAlice, true},
		{"did:plc:ALICE", "n!u@h", didAlice, false},
		{"did:*", "n!u@h", didAlice, false},
		{"did:plc:alice*", "n!u@h", didAlice, false},
		{didAlice, "n!u@h", didBob, false},
	}
	for _, tc := range tests {
		if got := MatchMask(tc.mask, tc.hostmask, tc.did); got != tc.want {
			t.Errorf("MatchMask(%q, %q, %q) = %v, want %v", tc.mask, tc.hostmask, tc.did, got, tc.want)
		}
	}
}

// TestGlobHostilePattern: a pattern built to make naive backtracking exponential must still answer.
func TestGlobHostilePattern(t *testing.T) {
	pattern := strings.Repeat("*a", 40) + "b"
	subject := strings.Repeat("a", 4000)
	if glob(pattern, subject) {
		t.Errorf("matched")
	}
	if !glob(pattern, subject+"b") {
		t.Errorf("did not match")
	}
}
