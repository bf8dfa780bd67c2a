package peering

import (
	"strings"
	"testing"
)

func TestDMOther(t *testing.T) {
	a, b := "did:web:a.example", "did:web:b.example"
	tests := []struct {
		venue, did string
		want       string
		ok         bool
	}{
		{"dm:" + a + "," + b, a, b, true},
		{"dm:" + a + "," + b, b, a, true},
		{"dm:" + a + "," + b, "did:web:c.example", "", false}, // does not name the sender
		{"dm:" + b + "," + a, a, "", false},                   // not in canonical (sorted) order
		{"dm:" + a + "," + a, a, "", false},                   // one party twice
		{"dm:" + a, a, "", false},
		{"dm:" + a + ",not-a-did", a, "", false},
		{"#chan", a, "", false},
		{"dm:" + a + "," + b, "", "", false}, // a guest names no one
	}
	for _, tt := range tests {
		got, ok := dmOther(tt.venue, tt.did)
		if got != tt.want || ok != tt.ok {
			t.Errorf("dmOther(%q, %q) = %q, %v; want %q, %v", tt.venue, tt.did, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzDMOther(f *testing.F) {
	f.Add("dm:did:web:a.example,did:web:b.example", "did:web:a.example")
	f.Add("dm:did:plc:aaaa,did:web:b.example", "did:web:b.example")
	f.Add("dm:,", "")
	f.Fuzz(func(t *testing.T, venue, did string) {
		other, ok := dmOther(venue, did)
		if !ok {
			return
		}
		// A venue accepted names did and other, distinct, in sorted order.
		lo, hi := min(did, other), max(did, other)
		if did == other || venue != "dm:"+lo+","+hi || strings.Contains(other, ",") {
			t.Fatalf("dmOther(%q, %q) = %q", venue, did, other)
		}
	})
}
