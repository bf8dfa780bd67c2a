package keyresolver

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

func TestIsPublicAddress(t *testing.T) {
	tests := []struct {
		addr   string
		public bool
	}{
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"2606:4700:4700::1111", true},
		{"::ffff:8.8.8.8", true},
		{"127.0.0.1", false},
		{"127.255.0.1", false},
		{"::1", false},
		{"::ffff:127.0.0.1", false},
		{"10.1.2.3", false},
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"192.168.1.1", false},
		{"::ffff:192.168.1.1", false},
		{"169.254.169.254", false},
		{"100.64.0.1", false},
		{"100.127.255.254", false},
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"::", false},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"255.255.255.255", false},
		{"240.0.0.1", false},
		{"192.0.0.8", false},
		{"192.0.2.1", false},
		{"198.18.0.1", false},
		{"198.51.100.1", false},
		{"203.0.113.1", false},
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"fe80::1", false},
		{"fe80::1%eth0", false},
		{"fec0::1", false},
		{"ff02::1", false},
		{"64:ff9b::7f00:1", false},
		{"2001:db8::1", false},
		{"2001::1", false},
		{"2002:7f00:1::", false},
		{"100::1", false},
	}
	for _, tt := range tests {
		addr := netip.MustParseAddr(tt.addr)
		if got := isPublicAddress(addr); got != tt.public {
			t.Errorf("isPublicAddress(%s) = %v, want %v", tt.addr, got, tt.public)
		}
	}
	if isPublicAddress(netip.Addr{}) {
		t.Error("zero Addr is public")
	}
}

func TestGuardRefusesLoopback(t *testing.T) {
	srv := newDocServer(t)
	did := srv.webDID()
	srv.serve("/.well-known/did.json", 200, didDocJSON(did))
	srv.serve("/plc/"+testPLC, 200, didDocJSON(testPLC))
	guarded := New(Options{RootCAs: srv.roots(), PLCDirectory: srv.URL + "/plc"})
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]

	for _, d := range []string{did, "did:web:localhost%3A" + port, testPLC} {
		t.Run(d, func(t *testing.T) {
			if _, err := guarded.Resolve(context.Background(), d); !errors.Is(err, ErrBlockedAddress) {
				t.Fatalf("Resolve(%q) error = %v, want ErrBlockedAddress", d, err)
			}
		})
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := guarded.HTTPClient().Do(req); !errors.Is(err, ErrBlockedAddress) {
		if resp != nil {
			resp.Body.Close()
		}
		t.Fatalf("HTTPClient GET loopback error = %v, want ErrBlockedAddress", err)
	}
	if n := srv.hitCount("/.well-known/did.json") + srv.hitCount("/plc/"+testPLC) + srv.hitCount("/"); n != 0 {
		t.Fatalf("guarded resolver reached the loopback server %d times", n)
	}
}

func TestGuardControlAddress(t *testing.T) {
	g := newGuardedDialer(0, false)
	for addr, ok := range map[string]bool{
		"8.8.8.8:443": true, "127.0.0.1:443": false, "[::1]:443": false, "[fe80::1%25lo]:1": false, "nonsense": false,
	} {
		err := g.controlAddress("tcp", addr, nil)
		if (err == nil) != ok || (!ok && !errors.Is(err, ErrBlockedAddress)) {
			t.Errorf("controlAddress(%q) = %v, want ok=%v", addr, err, ok)
		}
	}
	if err := newGuardedDialer(0, true).controlAddress("tcp", "127.0.0.1:1", nil); err != nil {
		t.Errorf("AllowPrivateAddresses still blocks: %v", err)
	}
}
