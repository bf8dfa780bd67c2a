package keyresolver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// maxRedirects bounds redirect chains followed by the guarded client.
const maxRedirects = 5

// nonPublicPrefixes are special-purpose ranges (IANA registries) that a
// fetch triggered by a remote party must never reach, in addition to what
// netip.Addr's predicates cover (loopback, RFC 1918 / fc00::/7, link-local,
// multicast, unspecified).
var nonPublicPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // CGNAT shared space
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64 (embeds IPv4 addresses)
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments (Teredo, ...)
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4 (embeds IPv4 addresses)
	netip.MustParsePrefix("fec0::/10"),       // deprecated site-local
}

// isPublicAddress reports whether addr is an ordinary global unicast address.
func isPublicAddress(addr netip.Addr) bool {
	if !addr.IsValid() || addr.Zone() != "" {
		return false
	}
	addr = addr.Unmap()
	if addr.IsLoopback() || addr.IsPrivate() || addr.IsLinkLocalUnicast() ||
		addr.IsMulticast() || addr.IsUnspecified() || addr.IsInterfaceLocalMulticast() ||
		addr.IsLinkLocalMulticast() || !addr.IsGlobalUnicast() {
		return false
	}
	for _, p := range nonPublicPrefixes {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

// guardedDialer resolves a host once, refuses it if any of its addresses is
// not public, and connects to the checked addresses themselves, so a DNS
// answer that changes between check and connect (rebinding) is never used.
type guardedDialer struct {
	allowPrivate bool
	resolver     *net.Resolver
	dialer       *net.Dialer
}

func newGuardedDialer(timeout time.Duration, allowPrivate bool) *guardedDialer {
	g := &guardedDialer{allowPrivate: allowPrivate, resolver: &net.Resolver{}}
	g.dialer = &net.Dialer{Timeout: timeout, Control: g.controlAddress}
	return g
}

// controlAddress re-checks the socket address just before connect: a second
// line of defence should anything hand the dialer an unchecked address.
func (g *guardedDialer) controlAddress(network, address string, _ syscall.RawConn) error {
	if g.allowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: unparseable address %q", ErrBlockedAddress, address)
	}
	if !isPublicAddress(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrBlockedAddress, ap.Addr())
	}
	return nil
}

func (g *guardedDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("keyresolver: dial address %q: %w", address, err)
	}
	addrs, err := g.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	var dialErr error
	for _, addr := range addrs {
		conn, err := g.dialer.DialContext(ctx, network, net.JoinHostPort(addr.String(), port))
		if err == nil {
			return conn, nil
		}
		dialErr = errors.Join(dialErr, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("keyresolver: connecting to %s: %w", host, dialErr)
}

// lookup resolves host (or parses an IP literal) and applies the address check.
func (g *guardedDialer) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		addrs, err = g.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("keyresolver: resolving %s: %w", host, err)
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("keyresolver: resolving %s: no addresses", host)
	}
	for i, addr := range addrs {
		addrs[i] = addr.Unmap()
		if !g.allowPrivate && !isPublicAddress(addr) {
			return nil, fmt.Errorf("%w: %s resolves to %s", ErrBlockedAddress, host, addr)
		}
	}
	return addrs, nil
}

// newGuardedClient builds the HTTP client every outbound fetch goes through.
// It never uses environment proxies (they would bypass the guard), follows
// at most maxRedirects redirects and never from https down to http; every
// redirect target passes the same address check when it is dialled.
// Callers must bound the bodies they read.
func newGuardedClient(opts Options) *http.Client {
	dialer := newGuardedDialer(opts.Timeout, opts.AllowPrivateAddresses)
	transport := &http.Transport{
		Proxy:       nil,
		DialContext: dialer.DialContext,
		DialTLSContext: func(ctx context.Context, network, address string) (net.Conn, error) {
			return dialer.dialTLS(ctx, network, address, opts.RootCAs)
		},
		TLSHandshakeTimeout:    opts.Timeout,
		ResponseHeaderTimeout:  opts.Timeout,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConns:           16,
		IdleConnTimeout:        90 * time.Second,
	}
	return &http.Client{
		Transport: transport,
		Timeout:   opts.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("keyresolver: more than %d redirects", maxRedirects)
			}
			if req.URL.Scheme != "https" && req.URL.Scheme != "http" {
				return fmt.Errorf("keyresolver: redirect to scheme %q refused", req.URL.Scheme)
			}
			if via[len(via)-1].URL.Scheme == "https" && req.URL.Scheme != "https" {
				return fmt.Errorf("keyresolver: redirect from https to %s refused", req.URL.Scheme)
			}
			return nil
		},
	}
}

// dialTLS dials through the guard and runs the TLS handshake itself, so that
// it knows the host name to verify even when extra roots are in use (the
// transport's own TLS path offers only one root pool).
func (g *guardedDialer) dialTLS(ctx context.Context, network, address string, extraRoots *x509.CertPool) (net.Conn, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("keyresolver: dial address %q: %w", address, err)
	}
	raw, err := g.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	conn := tls.Client(raw, tlsConfig(host, extraRoots))
	if err := conn.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("keyresolver: TLS handshake with %s: %w", host, err)
	}
	return conn, nil
}

// tlsConfig verifies host against the system roots and, when extra is set,
// against extra as well. crypto/tls takes only one root pool, so with extra
// roots the chain is verified here: first against the system roots, then
// against extra.
func tlsConfig(host string, extra *x509.CertPool) *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host, NextProtos: []string{"http/1.1"}}
	if extra != nil {
		// Verification is not skipped: VerifyConnection below does it.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			return verifyChain(cs, host, extra)
		}
	}
	return cfg
}

func verifyChain(cs tls.ConnectionState, host string, extra *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("keyresolver: server sent no certificate")
	}
	intermediates := x509.NewCertPool()
	for _, cert := range cs.PeerCertificates[1:] {
		intermediates.AddCert(cert)
	}
	opts := x509.VerifyOptions{DNSName: host, Intermediates: intermediates}
	_, systemErr := cs.PeerCertificates[0].Verify(opts)
	if systemErr == nil {
		return nil
	}
	opts.Roots = extra
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		return fmt.Errorf("keyresolver: certificate verification: %w", errors.Join(systemErr, err))
	}
	return nil
}
