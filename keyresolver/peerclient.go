package keyresolver

import (
	"crypto/x509"
	"net/http"
	"time"
)

// PeerClientOptions configures the client federation reaches configured peer servers with.
type PeerClientOptions struct {
	Timeout time.Duration // per request; default 10 s
	// AllowPrivateAddresses lets the client reach loopback, private and link-local addresses.
	// The client is only ever pointed at base URLs an operator configured (never at a URL found
	// on the wire), so this is safe to offer as an operator's choice (--peer-allow-private).
	AllowPrivateAddresses bool
	RootCAs               *x509.CertPool
}

// NewPeerClient returns an HTTP client with the same guard as the resolver's (no proxies, the
// checked address pinned, bounded redirects never from https to http), optionally allowed to
// reach private addresses. Callers must bound the bodies they read.
func NewPeerClient(opts PeerClientOptions) *http.Client {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	return newGuardedClient(Options{Timeout: opts.Timeout, AllowPrivateAddresses: opts.AllowPrivateAddresses, RootCAs: opts.RootCAs})
}
