package keyresolver

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Defaults applied by New to zero Options fields.
const (
	DefaultPLCDirectory     = "https://plc.directory"
	DefaultTimeout          = 10 * time.Second
	DefaultCacheTTL         = 5 * time.Minute
	DefaultMaxDocumentBytes = 64 << 10
	// missTTL is how long a failed resolution is remembered.
	missTTL = 30 * time.Second
	// maxCacheEntries bounds the cache; beyond it expired entries are swept
	// and, if still full, an arbitrary entry is dropped.
	maxCacheEntries = 10000
)

// Options configures a Resolver. Zero fields take the defaults above.
type Options struct {
	PLCDirectory          string        // default "https://plc.directory"
	Timeout               time.Duration // per fetch; default 10 s
	CacheTTL              time.Duration // for resolved documents; default 5 min (failures: 30 s)
	MaxDocumentBytes      int64         // default 64 KiB
	AllowPrivateAddresses bool          // TESTS ONLY: turns off the SSRF guard's address check
	RootCAs               *x509.CertPool
	Logger                *slog.Logger
	// ClientResolutions and ClientBurst limit the fresh resolutions made for
	// one client named by WithClient (per minute, and at once); defaults
	// DefaultClientResolutions and DefaultClientBurst.
	ClientResolutions int
	ClientBurst       int
}

// Resolver resolves DIDs to documents. It is safe for concurrent use.
type Resolver struct {
	opts   Options
	client *http.Client
	log    *slog.Logger
	now    func() time.Time

	flight  singleflight.Group
	mu      sync.Mutex
	cache   map[string]cacheEntry
	clients *clientLimits
}

type cacheEntry struct {
	doc     *Document
	err     error
	expires time.Time
}

// New returns a Resolver with opts (defaults filled in).
func New(opts Options) *Resolver {
	if opts.PLCDirectory == "" {
		opts.PLCDirectory = DefaultPLCDirectory
	}
	opts.PLCDirectory = strings.TrimRight(opts.PLCDirectory, "/")
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.CacheTTL <= 0 {
		opts.CacheTTL = DefaultCacheTTL
	}
	if opts.MaxDocumentBytes <= 0 {
		opts.MaxDocumentBytes = DefaultMaxDocumentBytes
	}
	if opts.ClientResolutions <= 0 {
		opts.ClientResolutions = DefaultClientResolutions
	}
	if opts.ClientBurst <= 0 {
		opts.ClientBurst = DefaultClientBurst
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Resolver{
		opts:    opts,
		client:  newGuardedClient(opts),
		log:     log,
		now:     time.Now,
		cache:   make(map[string]cacheEntry),
		clients: newClientLimits(opts.ClientResolutions, opts.ClientBurst),
	}
}

// HTTPClient returns the SSRF-guarded client the resolver fetches with. It
// refuses non-public addresses (unless AllowPrivateAddresses), pins the
// checked address, ignores proxy settings and times out after
// Options.Timeout. It does not limit body sizes: read through io.LimitReader.
func (r *Resolver) HTTPClient() *http.Client { return r.client }

// Resolve returns the DID document of did. did:key documents are synthesized
// locally; did:web and did:plc documents are fetched (and cached), and their
// id must equal did exactly (ErrDocumentMismatch otherwise). Concurrent calls
// for the same DID share one fetch. The returned document is the caller's own.
// A resolution that is not in the cache counts against the limit of the
// client named by WithClient, if any (ErrRateLimited over it). Errors name
// the DID cut to 96 bytes (ShortDID).
func (r *Resolver) Resolve(ctx context.Context, did string) (*Document, error) {
	method, err := ValidateDID(did)
	if err != nil {
		return nil, err
	}
	switch method {
	case "key":
		return DIDKeyDocument(did)
	case "web", "plc":
	default:
		return nil, fmt.Errorf("%w: did:%s", ErrUnsupportedMethod, method)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("keyresolver: resolving %s: %w", ShortDID(did), err)
	}
	if e, ok := r.cached(did); ok {
		if e.err != nil {
			return nil, e.err
		}
		return e.doc.clone(), nil
	}
	if client, ok := clientFrom(ctx); ok && !r.clients.allow(client, r.now()) {
		return nil, fmt.Errorf("%w: %s", ErrRateLimited, ShortDID(did))
	}
	// The fetch is shared, so it must not die with the first caller's
	// context; each caller still stops waiting when its own context ends.
	ch := r.flight.DoChan(did, func() (any, error) {
		// A flight that finished between our cache check and DoChan has
		// already stored its answer.
		if e, ok := r.cached(did); ok {
			return e.doc, e.err
		}
		return r.fetchAndCache(context.WithoutCancel(ctx), method, did)
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*Document).clone(), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("keyresolver: resolving %s: %w", ShortDID(did), ctx.Err())
	}
}

func (r *Resolver) cached(did string) (cacheEntry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.cache[did]
	if !ok || !r.now().Before(e.expires) {
		return cacheEntry{}, false
	}
	return e, true
}

func (r *Resolver) fetchAndCache(ctx context.Context, method, did string) (*Document, error) {
	doc, err := r.fetch(ctx, method, did)
	ttl := r.opts.CacheTTL
	if err != nil {
		ttl = missTTL
		r.log.Info("DID resolution failed", "did", ShortDID(did), "err", err)
	}
	r.store(did, cacheEntry{doc: doc, err: err, expires: r.now().Add(ttl)})
	return doc, err
}

func (r *Resolver) store(did string, e cacheEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.cache) >= maxCacheEntries {
		now := r.now()
		for k, old := range r.cache {
			if !now.Before(old.expires) {
				delete(r.cache, k)
			}
		}
		for k := range r.cache {
			if len(r.cache) < maxCacheEntries {
				break
			}
			delete(r.cache, k)
		}
	}
	r.cache[did] = e
}

func (r *Resolver) fetch(ctx context.Context, method, did string) (*Document, error) {
	var docURL string
	switch method {
	case "web":
		u, err := WebDocumentURL(did)
		if err != nil {
			return nil, err
		}
		docURL = u
	case "plc":
		if err := validatePLC(did); err != nil {
			return nil, err
		}
		docURL = r.opts.PLCDirectory + "/" + url.PathEscape(did)
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	body, err := r.get(ctx, docURL)
	if err != nil {
		return nil, fmt.Errorf("keyresolver: resolving %s: %w", ShortDID(did), err)
	}
	doc, err := ParseDocument(body)
	if err != nil {
		return nil, fmt.Errorf("keyresolver: resolving %s: %w", ShortDID(did), err)
	}
	if doc.ID != did {
		return nil, fmt.Errorf("%w: asked for %s, document is %s", ErrDocumentMismatch, ShortDID(did), ShortDID(doc.ID))
	}
	return doc, nil
}

// get fetches docURL and returns a body of at most MaxDocumentBytes. Its
// errors do not repeat the URL, which the caller's DID already names.
func (r *Resolver) get(ctx context.Context, docURL string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, docURL, nil)
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	req.Header.Set("Accept", "application/did+ld+json, application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("GET: %w", err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return nil, fmt.Errorf("%w: GET: %s", ErrNotFound, resp.Status)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET: unexpected status %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, r.opts.MaxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the document: %w", err)
	}
	if int64(len(body)) > r.opts.MaxDocumentBytes {
		return nil, fmt.Errorf("GET: document larger than %d bytes", r.opts.MaxDocumentBytes)
	}
	return body, nil
}
