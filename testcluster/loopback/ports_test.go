package loopback

import (
	"net"
	"testing"
)

func TestParseRangeStart(t *testing.T) {
	cases := []struct {
		in   string
		want int
	}{
		{"32768\t60999\n", 32768},
		{"20000 30000", 20000},
		{"", 49152},
		{"abc def", 49152},
		{"1024 65535", 49152}, // no room below: fall back rather than pick service ports
		{"70000 80000", 49152},
	}
	for _, tc := range cases {
		if got := parseRangeStart(tc.in); got != tc.want {
			t.Errorf("parseRangeStart(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestPortsAreDistinctBelowTheEphemeralRangeAndBindable(t *testing.T) {
	ports, err := Ports(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	limit := ephemeralStart()
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d picked twice", p)
		}
		seen[p] = true
		if p < lowest || p >= limit {
			t.Fatalf("port %d outside [%d, %d)", p, lowest, limit)
		}
		l, err := net.Listen("tcp", Addr(p))
		if err != nil {
			t.Fatalf("port %d not bindable after release: %v", p, err)
		}
		l.Close()
	}
}
