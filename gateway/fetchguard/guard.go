package fetchguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrBlocked is the error of a URL or an address the guard refuses; test with errors.Is.
var ErrBlocked = errors.New("fetchguard: blocked")

// ErrTooLarge is the error of a body over the limit given to ReadAll.
var ErrTooLarge = errors.New("fetchguard: body too large")

// Defaults of Options.
const (
	DefaultTimeout      = 10 * time.Second
	DefaultMaxRedirects = 3
)

// blocked lists every range a guarded fetch must not reach. IPv4-mapped IPv6 addresses are
// unmapped before the check; NAT64, 6to4 and Teredo are refused whole because they embed IPv4
// addresses.
var blocked = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32",
		"2002::/16", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// IsPublic reports whether a guarded fetch may connect to addr: a global unicast address outside
// every special-purpose range.
func IsPublic(addr netip.Addr) bool {
	addr = addr.Unmap()
	if !addr.IsValid() || addr.Zone() != "" || !addr.IsGlobalUnicast() {
		return false
	}
	for _, p := range blocked {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

// Options configures a Client.
type Options struct {
	// Timeout bounds a whole fetch, redirects and body included (DefaultTimeout when zero).
	Timeout time.Duration
	// MaxRedirects bounds the redirects followed (DefaultMaxRedirects when zero; negative: none).
	MaxRedirects int
	// UserAgent is sent with every request.
	UserAgent string
	// AllowLoopback lets loopback addresses through; for tests that run the remote party on
	// 127.0.0.1 only.
	AllowLoopback bool
	// Resolver resolves host names (nil: the system's). Every address it returns still passes
	// the connect-time check.
	Resolver *net.Resolver
}

// Client fetches URLs named by remote parties.
type Client struct {
	opts Options
	http *http.Client
}

// New builds a Client.
func New(opts Options) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxRedirects == 0 {
		opts.MaxRedirects = DefaultMaxRedirects
	}
	c := &Client{opts: opts}
	dialer := &net.Dialer{Timeout: opts.Timeout, Control: c.control, Resolver: opts.Resolver}
	transport := &http.Transport{
		Proxy:                  nil, // proxies from the environment would bypass the guard
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    opts.Timeout,
		ResponseHeaderTimeout:  opts.Timeout,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConns:           32,
		IdleConnTimeout:        90 * time.Second,
	}
	c.http = &http.Client{Transport: transport, Timeout: opts.Timeout, CheckRedirect: c.checkRedirect}
	return c
}

// control runs just before each connect, on the address being connected to.
func (c *Client) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: unparseable address %q", ErrBlocked, address)
	}
	if !c.addressAllowed(ap.Addr()) {
		return fmt.Errorf("%w: address %s is not public", ErrBlocked, ap.Addr())
	}
	return nil
}

func (c *Client) addressAllowed(addr netip.Addr) bool {
	return IsPublic(addr) || (c.opts.AllowLoopback && addr.Unmap().IsLoopback())
}

func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if c.opts.MaxRedirects < 0 || len(via) > c.opts.MaxRedirects {
		return fmt.Errorf("%w: more than %d redirects", ErrBlocked, max(c.opts.MaxRedirects, 0))
	}
	if _, err := c.CheckURL(req.URL.String()); err != nil {
		return err
	}
	if via[len(via)-1].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return fmt.Errorf("%w: redirect from https to %s", ErrBlocked, req.URL.Scheme)
	}
	return nil
}

// CheckURL parses raw and refuses what the guard never fetches (see the package doc).
func (c *Client) CheckURL(raw string) (*url.URL, error) {
	return checkURL(raw, c.opts.AllowLoopback)
}

// CheckURL is Client.CheckURL without the test-only loopback allowance.
func CheckURL(raw string) (*url.URL, error) { return checkURL(raw, false) }

// maxURL bounds the URLs the guard considers.
const maxURL = 4096

func checkURL(raw string, allowLoopback bool) (*url.URL, error) {
	if raw == "" || len(raw) > maxURL {
		return nil, fmt.Errorf("%w: empty or over-long URL", ErrBlocked)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBlocked, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%w: scheme %q", ErrBlocked, u.Scheme)
	}
	if u.User != nil || u.Opaque != "" {
		return nil, fmt.Errorf("%w: URL with user info or an opaque part", ErrBlocked)
	}
	host := u.Hostname()
	if host == "" {
		return nil, fmt.Errorf("%w: no host", ErrBlocked)
	}
	if port := u.Port(); port != "" {
		if p, err := netip.ParseAddrPort("0.0.0.0:" + port); err != nil || p.Port() == 0 {
			return nil, fmt.Errorf("%w: port %q", ErrBlocked, port)
		}
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if !IsPublic(addr) && !(allowLoopback && addr.Unmap().IsLoopback()) {
			return nil, fmt.Errorf("%w: address %s is not public", ErrBlocked, addr)
		}
		return u, nil
	}
	if strings.ContainsAny(host, "%[]") {
		return nil, fmt.Errorf("%w: host %q", ErrBlocked, host)
	}
	lower := strings.TrimSuffix(strings.ToLower(host), ".")
	if numericHost(lower) {
		return nil, fmt.Errorf("%w: numeric host %q is not a canonical IP address", ErrBlocked, host)
	}
	if !allowLoopback && (lower == "localhost" || strings.HasSuffix(lower, ".localhost")) {
		return nil, fmt.Errorf("%w: host %q", ErrBlocked, host)
	}
	return u, nil
}

// numericHost reports whether a host name's last label is a number (decimal, octal or 0x hex):
// no top-level domain is, but inet_aton reads such names as IPv4 addresses (127.1, 2130706433,
// 0x7f000001, 0177.0.0.1).
func numericHost(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		last = last[2:]
		return strings.Trim(last, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}

// Do sends req through the guard after checking its URL. The caller closes the body and must
// bound what it reads (ReadAll, io.LimitReader).
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	if _, err := c.CheckURL(req.URL.String()); err != nil {
		return nil, err
	}
	if c.opts.UserAgent != "" && req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", c.opts.UserAgent)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", req.URL.Redacted(), err)
	}
	return resp, nil
}

// Get fetches raw with the given extra headers.
func (c *Client) Get(ctx context.Context, raw string, header http.Header) (*http.Response, error) {
	u, err := c.CheckURL(raw)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBlocked, err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	return c.Do(req)
}

// ReadAll reads at most limit bytes of r, and ErrTooLarge when there is more.
func ReadAll(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading body: %w", err)
	}
	if int64(len(b)) > limit {
		return nil, ErrTooLarge
	}
	return b, nil
}
