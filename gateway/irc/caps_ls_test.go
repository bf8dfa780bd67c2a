package irc

import (
	"slices"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/sasl"
)

func TestCapLSLines(t *testing.T) {
	long := strings.Repeat("n", 30)
	for _, tc := range []struct {
		name         string
		v302         bool
		server, nick string
		wantLines    int // 0: any number
	}{
		{"before 302: one line, no values", false, "palaver.local", "*", 1},
		{"302: every capability, over lines", true, "palaver.local", "*", 0},
		{"302: a long server name and nick still fit the limit", true, strings.Repeat("s", 63) + ".example", long, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budget := capLSBudget(tc.server, tc.nick)
			lines := capLSLines(tc.v302, budget)
			if tc.wantLines != 0 && len(lines) != tc.wantLines {
				t.Fatalf("%d lines, want %d: %q", len(lines), tc.wantLines, lines)
			}
			var got []string
			for i, l := range lines {
				full := ":" + tc.server + " CAP " + tc.nick + " LS * :" + l
				if tc.v302 && len(full) > maxLine {
					t.Errorf("line of %d bytes: %q", len(full), full)
				}
				if i < len(lines)-1 { // filled: the next name would not have fitted
					next := strings.Fields(lines[i+1])[0]
					if len(l)+1+len(next) <= budget {
						t.Errorf("line %d is not filled: %q leaves room for %q", i, l, next)
					}
				}
				got = append(got, strings.Fields(l)...)
			}
			want := capLS(tc.v302)
			if !slices.Equal(got, want) {
				t.Errorf("lines carry %q, want %q", got, want)
			}
			// sasl, then what freeq's clients request, on the first line.
			first := strings.Fields(lines[0])
			for i, name := range capsFirst {
				if i >= len(first) || strings.SplitN(first[i], "=", 2)[0] != name {
					t.Fatalf("first line %q: position %d is not %q", lines[0], i, name)
				}
			}
			if tc.v302 != slices.Contains(got, "sasl=ATPROTO-CHALLENGE") || tc.v302 == slices.Contains(got, "sasl") {
				t.Errorf("302 %v: sasl's value in %q", tc.v302, got)
			}
			if !tc.v302 && slices.ContainsFunc(got, func(n string) bool { return strings.Contains(n, "=") }) {
				t.Errorf("before 302: values in %q", got)
			}
		})
	}
	if lines := capLSLines(true, 100); len(lines) < 2 {
		t.Fatalf("a list over the budget was not split: %q", lines)
	}
	for _, name := range capsFirst {
		if _, ok := capNames[name]; !ok {
			t.Errorf("%q is offered first but is not a capability", name)
		}
	}
}

// TestCapLSDefaultOneLine: with the default configuration (client passwords on, account
// registration and draft/metadata-3 off) CAP LS 302 is one line, as freeq's JavaScript SDK needs:
// it answers each LS line on its own and ends the negotiation on one naming none of the
// capabilities it wants, before authenticating. draft/metadata-3 is offered only when configured.
func TestCapLSDefaultOneLine(t *testing.T) {
	const server = "palaver.local"
	budget := capLSBudget(server, "*")
	passwords := &sasl.Verifier{Passwords: func(string) (sasl.Credential, bool) { return sasl.Credential{}, false }}
	s := &Server{cfg: Config{ServerName: server}, verifier: passwords}
	lines := s.capLSLines(true, budget)
	if len(lines) != 1 || strings.Contains(lines[0], metadata3Cap) {
		t.Fatalf("default CAP LS: %q", lines)
	}
	// cap-notify is named only when it fits on the one line (above: it never makes a second
	// one); at the default server name, "localhost", it does.
	local := &Server{cfg: Config{ServerName: "localhost"}, verifier: passwords}
	if got := local.capLSLines(true, capLSBudget("localhost", "*")); len(got) != 1 || !strings.HasSuffix(got[0], " "+capNotifyCap) {
		t.Fatalf("CAP LS at localhost: %q, want one line ending in %s", got, capNotifyCap)
	}
	s.cfg.Metadata3 = true
	if got := strings.Join(s.capLSLines(true, budget), " "); !strings.Contains(" "+got+" ", " "+metadata3Cap+"=before-connect,") {
		t.Fatalf("CAP LS with draft/metadata-3 configured: %q", got)
	}
}
