package transport

import (
	"net"
	"testing"
)

func TestIPLimiter(t *testing.T) {
	v4 := net.ParseIP("192.0.2.1").To4()
	mapped := net.ParseIP("::ffff:192.0.2.1")
	other := net.ParseIP("2001:db8::1")
	sameSlash64 := net.ParseIP("2001:db8::ffff:1:2:3")
	nextSlash64 := net.ParseIP("2001:db8:0:1::1")

	acquire := func(ip net.IP, ok bool) limiterStep { return limiterStep{ip: ip, release: -1, wantOK: ok} }
	release := func(i int) limiterStep { return limiterStep{release: i} }

	tests := []struct {
		name  string
		limit int
		steps []limiterStep
	}{
		{"cap of two", 2, []limiterStep{acquire(v4, true), acquire(v4, true), acquire(v4, false)}},
		{"release frees a slot", 1, []limiterStep{acquire(v4, true), acquire(v4, false), release(0), acquire(v4, true)}},
		{"release is idempotent", 1, []limiterStep{acquire(v4, true), acquire(other, true), release(0), release(0), acquire(v4, true), acquire(v4, false)}},
		{"ipv4-mapped counts as ipv4", 1, []limiterStep{acquire(v4, true), acquire(mapped, false)}},
		{"addresses are independent", 1, []limiterStep{acquire(v4, true), acquire(other, true), acquire(other, false)}},
		{"ipv6 counts per /64", 2, []limiterStep{acquire(other, true), acquire(sameSlash64, true), acquire(other, false), acquire(nextSlash64, true)}},
		{"ipv6 /64 release", 1, []limiterStep{acquire(sameSlash64, true), acquire(other, false), release(0), acquire(other, true)}},
		{"neighbouring ipv4 addresses are independent", 1, []limiterStep{acquire(v4, true), acquire(net.ParseIP("192.0.2.2"), true)}},
		{"no ip is not limited", 1, []limiterStep{acquire(nil, true), acquire(nil, true)}},
		{"zero disables", 0, []limiterStep{acquire(v4, true), acquire(v4, true), acquire(v4, true)}},
		{"negative disables", -1, []limiterStep{acquire(v4, true), acquire(v4, true)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewIPLimiter(tt.limit)
			releases := make([]func(), len(tt.steps))
			for i, s := range tt.steps {
				if s.release >= 0 {
					releases[s.release]()
					continue
				}
				rel, ok := l.Acquire(s.ip)
				if ok != s.wantOK {
					t.Fatalf("step %d: Acquire(%v) ok = %v, want %v", i, s.ip, ok, s.wantOK)
				}
				if ok && rel == nil {
					t.Fatalf("step %d: nil release func", i)
				}
				releases[i] = rel
			}
		})
	}
}

// limiterStep acquires a slot for ip, or with release >= 0 calls the
// release func returned by that earlier step.
type limiterStep struct {
	ip      net.IP
	release int
	wantOK  bool
}

func TestNilIPLimiterAdmitsAll(t *testing.T) {
	var l *IPLimiter
	release, ok := l.Acquire(net.ParseIP("192.0.2.1"))
	if !ok || release == nil {
		t.Fatal("nil limiter refused")
	}
	release()
}

func TestIPLimiterForgetsIdleAddresses(t *testing.T) {
	l := NewIPLimiter(3)
	ip := net.ParseIP("192.0.2.9")
	r1, _ := l.Acquire(ip)
	r2, _ := l.Acquire(ip)
	r1()
	r2()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.counts) != 0 {
		t.Fatalf("counts not emptied: %v", l.counts)
	}
}

func TestAddrIP(t *testing.T) {
	tests := []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 1}, "192.0.2.1"},
		{&net.UDPAddr{IP: net.ParseIP("2001:db8::1"), Port: 1}, "2001:db8::1"},
		{&net.UnixAddr{Name: "/tmp/sock", Net: "unix"}, "<nil>"},
		{nil, "<nil>"},
		{fakeAddr("[2001:db8::2]:6667"), "2001:db8::2"},
	}
	for _, tt := range tests {
		if got := addrIP(tt.addr).String(); got != tt.want {
			t.Errorf("addrIP(%v) = %s, want %s", tt.addr, got, tt.want)
		}
	}
}

type fakeAddr string

func (a fakeAddr) Network() string { return "fake" }
func (a fakeAddr) String() string  { return string(a) }
