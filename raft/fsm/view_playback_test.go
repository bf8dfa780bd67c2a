package fsm

import "testing"

func TestIncarnationIndex(t *testing.T) {
	a := Applier{env: Envelope{Time: 1_700_000_000_123}, index: 4242}
	tests := []struct {
		inc  string
		want uint64
	}{
		{a.incarnation(), 4242},
		{"", 0},
		{"abc", 0},
		{"abc.!!", 0},
		{"x.zz", 35*36 + 35},
	}
	for _, tc := range tests {
		if got := incarnationIndex(tc.inc); got != tc.want {
			t.Errorf("incarnationIndex(%q) = %d, want %d", tc.inc, got, tc.want)
		}
	}
}
