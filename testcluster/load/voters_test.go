package load

import (
	"bufio"
	"strings"
	"testing"
)

func TestParseVoters(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"# HELP palaver_raft_voters x\n# TYPE palaver_raft_voters gauge\npalaver_raft_voters 3\n", 3, true},
		{"palaver_raft_voters_total 9\npalaver_raft_voters 5\n", 5, true},
		{"palaver_raft_voters 1e+00\n", 1, true},
		{"palaver_raft_term 2\n", 0, false},
		{"palaver_raft_voters x\n", 0, false},
	}
	for _, tt := range tests {
		got, err := parseVoters(bufio.NewScanner(strings.NewReader(tt.in)))
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseVoters(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzParseVoters(f *testing.F) {
	f.Add("palaver_raft_voters 3\n")
	f.Add("palaver_raft_voters NaN\n")
	f.Add("palaver_raft_voters")
	f.Fuzz(func(t *testing.T, in string) {
		n, err := parseVoters(bufio.NewScanner(strings.NewReader(in)))
		if err != nil && n != 0 {
			t.Fatalf("error %v with count %d", err, n)
		}
	})
}
