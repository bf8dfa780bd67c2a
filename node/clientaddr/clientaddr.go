package clientaddr

import "net/netip"

// Key is the unit a client at addr is counted by: its /32 for IPv4, its /64 for IPv6.
func Key(addr netip.Addr) netip.Prefix {
	addr = addr.Unmap().WithZone("")
	bits := 32
	if addr.Is6() {
		bits = 64
	}
	p, _ := addr.Prefix(bits) // cannot fail: bits fits the address family, and there is no zone
	return p
}

// ParseKey is Key for an address in text: an IP ("192.0.2.1", "2001:db8::1%eth0") or an IP and
// port as net.Addr.String writes it ("192.0.2.1:6667", "[2001:db8::1]:6667"). ok is false when s
// is neither.
func ParseKey(s string) (key netip.Prefix, ok bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return Key(ap.Addr()), true
	}
	addr, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, false
	}
	return Key(addr), true
}
