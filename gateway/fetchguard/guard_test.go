package fetchguard

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://example.com/x", true},
		{"http://example.com:8080/x?y=1", true},
		{"https://93.184.216.34/", true},
		{"https://[2606:2800:220:1:248:1893:25c8:1946]/", true},
		{"file:///etc/passwd", false},
		{"gopher://example.com/", false},
		{"ftp://example.com/", false},
		{"//example.com/x", false},
		{"https://user:pw@example.com/", false},
		{"http://127.0.0.1/", false},
		{"http://127.9.9.9/", false},
		{"http://localhost/", false},
		{"http://a.localhost./", false},
		{"http://0.0.0.0/", false},
		{"http://0/", false},
		{"http://[::1]/", false},
		{"http://[::]/", false},
		{"http://[::ffff:127.0.0.1]/", false},
		{"http://[::ffff:7f00:1]/", false},
		{"http://[0:0:0:0:0:ffff:a00:1]/", false},
		{"http://[64:ff9b::7f00:1]/", false},
		{"http://[fe80::1%25eth0]/", false},
		{"http://2130706433/", false},
		{"http://017700000001/", false},
		{"http://0177.0.0.1/", false},
		{"http://0x7f.0.0.1/", false},
		{"http://0x7f000001/", false},
		{"http://127.1/", false},
		{"http://10.0.0.1/", false},
		{"http://172.16.5.4/", false},
		{"http://192.168.1.1/", false},
		{"http://100.64.0.1/", false},
		{"http://169.254.169.254/latest/meta-data/", false},
		{"http://[fd00:ec2::254]/", false},
		{"http://224.0.0.1/", false},
		{"http://255.255.255.255/", false},
		{"http://[ff02::1]/", false},
		{"http://example.com:0/", false},
		{"http://example.com:99999/", false},
		{"http:///nohost", false},
		{"", false},
		{"https://example.com/" + strings.Repeat("a", maxURL), false},
	} {
		_, err := CheckURL(tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("CheckURL(%q) = %v, want ok %v", tc.url, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrBlocked) {
			t.Errorf("CheckURL(%q): %v is not ErrBlocked", tc.url, err)
		}
	}
}

func TestIsPublic(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"8.8.8.8", true}, {"2001:4860:4860::8888", true}, {"127.0.0.1", false}, {"::1", false},
		{"::ffff:10.1.1.1", false}, {"169.254.169.254", false}, {"fd00:ec2::254", false}, {"100.127.255.255", false},
		{"198.18.0.1", false}, {"2002:7f00:1::", false}, {"2001:0:4136:e378::", false}, {"0.1.2.3", false},
	} {
		if got := IsPublic(netip.MustParseAddr(tc.addr)); got != tc.ok {
			t.Errorf("IsPublic(%s) = %v", tc.addr, got)
		}
	}
}

// fakeDNS answers every A query with addr, over UDP on loopback.
func fakeDNS(t *testing.T, addr netip.Addr) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
			b.StartQuestions()
			b.Question(q)
			b.StartAnswers()
			if q.Type == dnsmessage.TypeA && addr.Is4() {
				b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}, dnsmessage.AResource{A: addr.As4()})
			}
			out, err := b.Finish()
			if err == nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

// A name that passes the URL check but resolves to a refused address is stopped at connect.
func TestNameResolvingToPrivateAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secret") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, addr := range []string{"127.0.0.1", "10.0.0.1", "169.254.169.254", "0.0.0.0"} {
		c := New(Options{Timeout: 2 * time.Second, Resolver: fakeDNS(t, netip.MustParseAddr(addr))})
		_, err := c.Get(context.Background(), "http://rebind.example:"+port+"/", nil)
		if !errors.Is(err, ErrBlocked) {
			t.Errorf("name resolving to %s: %v, want ErrBlocked", addr, err)
		}
	}
	// The same fetch with loopback allowed goes through: the refusal above is the guard's.
	c := New(Options{Timeout: 2 * time.Second, Resolver: fakeDNS(t, netip.MustParseAddr("127.0.0.1")), AllowLoopback: true})
	resp, err := c.Get(context.Background(), "http://rebind.example:"+port+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func TestRedirects(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/", http.StatusFound)
		case "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/to-ok":
			http.Redirect(w, r, "/ok", http.StatusFound)
		default:
			io.WriteString(w, "ok")
		}
	}))
	defer srv.Close()
	c := New(Options{Timeout: 2 * time.Second, AllowLoopback: true, MaxRedirects: 2})
	for _, tc := range []struct {
		path string
		ok   bool
	}{{"/to-metadata", false}, {"/to-file", false}, {"/loop", false}, {"/to-ok", true}} {
		resp, err := c.Get(context.Background(), srv.URL+tc.path, nil)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.path, err, tc.ok)
		}
		if err == nil {
			resp.Body.Close()
		} else if !errors.Is(err, ErrBlocked) {
			t.Errorf("%s: %v is not ErrBlocked", tc.path, err)
		}
	}
	// Without the test switch, loopback itself is refused.
	if _, err := New(Options{}).Get(context.Background(), srv.URL+"/ok", nil); !errors.Is(err, ErrBlocked) {
		t.Errorf("loopback without the switch: %v", err)
	}
}

func TestReadAll(t *testing.T) {
	for _, tc := range []struct {
		body  string
		limit int64
		err   error
	}{{"abc", 3, nil}, {"abcd", 3, ErrTooLarge}, {"", 0, nil}} {
		b, err := ReadAll(strings.NewReader(tc.body), tc.limit)
		if !errors.Is(err, tc.err) || (err == nil && string(b) != tc.body) {
			t.Errorf("ReadAll(%q, %d) = %q, %v", tc.body, tc.limit, b, err)
		}
	}
}

func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://example.com/", "http://127.0.0.1/", "http://0x7f.1/", "http://[::ffff:7f00:1]/", "file:///x", "http://a@b/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := CheckURL(raw)
		if err != nil {
			return
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			t.Fatalf("accepted scheme %q", u.Scheme)
		}
		host := u.Hostname()
		if host == "" || u.User != nil {
			t.Fatalf("accepted %q", raw)
		}
		if addr, err := netip.ParseAddr(host); err == nil && !IsPublic(addr) {
			t.Fatalf("accepted non-public %s", addr)
		}
		if _, err := netip.ParseAddr(host); err != nil && numericHost(strings.ToLower(host)) {
			t.Fatalf("accepted numeric host %q", host)
		}
	})
}
