// Package fetchguard owns the HTTP client through which the server fetches URLs that remote
// parties name (the PDS blob proxy, link previews, media-space blobs): a guard against
// server-side request forgery.
//
// Two layers. CheckURL refuses, before any I/O, URLs that are not plain http(s) with a host name
// or a canonical public IP literal: other schemes (file:, gopher:, ...), user info, numeric host
// spellings that resolvers read as IPs (decimal 2130706433, octal 0177.0.0.1, hex 0x7f.1, short
// 127.1) and literal non-public addresses. Then every connection the client opens, including
// those of redirects, passes the dialer's Control hook, which sees the address actually being
// connected to after DNS resolution: loopback, private (RFC 1918, fc00::/7), link-local (and the
// cloud metadata addresses 169.254.169.254 and fd00:ec2::254), unspecified, multicast, CGNAT
// (100.64.0.0/10), the other special-purpose ranges and IPv4-mapped or NAT64 forms of them are
// refused there, so a DNS answer that changes between check and connect (rebinding) gains
// nothing. The client ignores proxy environment variables, follows at most MaxRedirects
// redirects (each one checked by CheckURL), never downgrades https to http, bounds the whole
// exchange by a timeout, and Get bounds the body it hands back.
//
// AllowLoopback is for tests only: it lets loopback addresses through both layers so that a
// test can run the remote party on 127.0.0.1; everything else stays refused.
package fetchguard
