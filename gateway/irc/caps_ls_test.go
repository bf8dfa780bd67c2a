package irc

import (
	"slices"
	"strings"
	"testing"
)

func TestCapLSLines(t *testing.T) {
	for _, tc := range []struct {
		name      string
		v302      bool
		wantLines func(n int) bool
	}{
		{"before 302: one line, no values", false, func(n int) bool { return n == 1 }},
		{"302: split within the budget", true, func(n int) bool { return n >= 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := capLSLines(tc.v302)
			if !tc.wantLines(len(lines)) {
				t.Fatalf("%d lines: %q", len(lines), lines)
			}
			var got []string
			for _, l := range lines {
				if tc.v302 && len(l) > capLSLineBudget {
					t.Errorf("line of %d bytes: %q", len(l), l)
				}
				got = append(got, strings.Fields(l)...)
			}
			want := strings.Fields(capLS(tc.v302))
			if !slices.Equal(got, want) {
				t.Errorf("lines carry %q, want %q", got, want)
			}
			if !slices.Contains(got, "freeq.at/act") {
				t.Errorf("freeq.at/act not offered: %q", got)
			}
			if tc.v302 == slices.Contains(got, "sasl") {
				t.Errorf("302 %v: sasl without its value in %q", tc.v302, got)
			}
		})
	}
	if len(capLS(true)) > capLSLineBudget && len(capLSLines(true)) < 2 {
		t.Fatal("a list over the budget was not split")
	}
}
