package clientaddr

import (
	"net/netip"
	"testing"
)

func TestParseKey(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" when not an address
	}{
		{"192.0.2.1", "192.0.2.1/32"},
		{"192.0.2.1:6667", "192.0.2.1/32"},
		{"::ffff:192.0.2.1", "192.0.2.1/32"},
		{"[::ffff:192.0.2.1]:443", "192.0.2.1/32"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff::1", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:3:4:5:6]:6697", "2001:db8:1:2::/64"},
		{"2001:db8:1:3:3:4:5:6%e0", "2001:db8:1:3::/64"},
		{"[fe80::1%eth0]:1", "fe80::/64"},
		{"::1", "::/64"},
		{"[::1]:80", "::/64"},
		{"", ""},
		{"not an address", ""},
		{"192.0.2.1:", ""},
		{"192.0.2.256", ""},
		{"@/tmp/sock", ""},
	}
	for _, tt := range tests {
		got, ok := ParseKey(tt.in)
		if ok != (tt.want != "") || (ok && got.String() != tt.want) {
			t.Errorf("ParseKey(%q) = %v, %v; want %q", tt.in, got, ok, tt.want)
		}
		if !ok {
			continue
		}
		// Text and parsed forms agree: Key of the parsed address is the same unit.
		if ap, err := netip.ParseAddrPort(tt.in); err == nil && Key(ap.Addr()) != got {
			t.Errorf("Key(%v) = %v, ParseKey = %v", ap.Addr(), Key(ap.Addr()), got)
		}
	}
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"192.0.2.1", "[2001:db8::1]:1", "::ffff:1.2.3.4", "fe80::1%eth0", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		key, ok := ParseKey(s)
		if !ok {
			return
		}
		if key.Bits() != 32 && key.Bits() != 64 || key.Addr().Is4In6() || key.Addr().Zone() != "" || key.Masked() != key {
			t.Fatalf("ParseKey(%q) = %v", s, key)
		}
		if again, ok := ParseKey(key.Addr().String()); !ok || again != key {
			t.Fatalf("ParseKey(%q) = %v, but its address keys as %v", s, key, again)
		}
	})
}
