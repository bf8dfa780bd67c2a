package keyresolver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// docServer is a loopback TLS server serving canned responses by path and
// counting requests.
type docServer struct {
	*httptest.Server
	mu     sync.Mutex
	routes map[string]func(w http.ResponseWriter, r *http.Request)
	hits   map[string]int
}

func newDocServer(t *testing.T) *docServer {
	t.Helper()
	s := &docServer{routes: map[string]func(http.ResponseWriter, *http.Request){}, hits: map[string]int{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		h := s.routes[r.URL.Path]
		s.mu.Unlock()
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	// Handshakes refused on purpose would otherwise be logged.
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func (s *docServer) handle(path string, h func(http.ResponseWriter, *http.Request)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes[path] = h
}

func (s *docServer) serve(path string, status int, body string) {
	s.handle(path, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	})
}

func (s *docServer) hitCount(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// webDID is the did:web naming this server's root, e.g. did:web:127.0.0.1%3A4321.
func (s *docServer) webDID() string {
	u, _ := url.Parse(s.URL)
	return "did:web:" + strings.ReplaceAll(u.Host, ":", "%3A")
}

func (s *docServer) roots() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	return pool
}

func (s *docServer) testResolver(extra Options) *Resolver {
	extra.AllowPrivateAddresses = true
	extra.RootCAs = s.roots()
	extra.Timeout = 5 * time.Second
	return New(extra)
}

func didDocJSON(did string) string {
	return fmt.Sprintf(`{"id":%q,"alsoKnownAs":["at://h.example"],
		"verificationMethod":[{"id":"#k","type":"Multikey","controller":%q,
		"publicKeyMultibase":"z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"}],
		"authentication":["#k"],
		"service":[{"id":"#atproto_pds","type":"AtprotoPersonalDataServer","serviceEndpoint":"https://pds.example"}]}`, did, did)
}

const testPLC = "did:plc:ewvi7nxzyoun6zhxrhs64oiz"

func TestResolveSuccess(t *testing.T) {
	srv := newDocServer(t)
	root := srv.webDID()
	nested := root + ":users:alice"
	srv.serve("/.well-known/did.json", 200, didDocJSON(root))
	srv.serve("/users/alice/did.json", 200, didDocJSON(nested))
	srv.serve("/plc/"+testPLC, 200, didDocJSON(testPLC))
	r := srv.testResolver(Options{PLCDirectory: srv.URL + "/plc/"})

	for _, did := range []string{root, nested, testPLC, "did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme"} {
		t.Run(did, func(t *testing.T) {
			doc, err := r.Resolve(context.Background(), did)
			if err != nil {
				t.Fatal(err)
			}
			if doc.ID != did || len(doc.CandidateKeys()) != 1 {
				t.Fatalf("Resolve(%q) = %+v", did, doc)
			}
		})
	}
}

func TestResolveFailures(t *testing.T) {
	srv := newDocServer(t)
	base := srv.webDID()
	srv.serve("/mismatch/did.json", 200, didDocJSON("did:web:elsewhere.example"))
	srv.serve("/case/did.json", 200, didDocJSON(base+":CASE"))
	srv.serve("/broken/did.json", 200, `{"id":`)
	srv.serve("/array/did.json", 200, `[]`)
	srv.serve("/error/did.json", 500, `oops`)
	srv.serve("/gone/did.json", 410, ``)
	srv.serve("/big/did.json", 200, didDocJSON(base+":big")+strings.Repeat(" ", 2048))
	r := srv.testResolver(Options{MaxDocumentBytes: 2048, PLCDirectory: srv.URL})

	tests := []struct {
		did     string
		wantErr error
	}{
		{base + ":mismatch", ErrDocumentMismatch},
		{base + ":case", ErrDocumentMismatch},
		{base + ":missing", ErrNotFound},
		{base + ":gone", ErrNotFound},
		{base + ":broken", nil},
		{base + ":array", nil},
		{base + ":error", nil},
		{base + ":big", nil},
		{testPLC, ErrNotFound},
		{"did:plc:short", ErrInvalidDID},
		{"did:example:123", ErrUnsupportedMethod},
		{"did:web:bad%2Fhost", ErrInvalidDID},
		{"not-a-did", ErrInvalidDID},
		{"did:key:z6MkNotAKey", ErrInvalidDID},
	}
	for _, tt := range tests {
		t.Run(tt.did, func(t *testing.T) {
			doc, err := r.Resolve(context.Background(), tt.did)
			if err == nil {
				t.Fatalf("Resolve(%q) = %+v, want error", tt.did, doc)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Resolve(%q) error %v, want %v", tt.did, err, tt.wantErr)
			}
			if tt.wantErr == nil && errors.Is(err, ErrNotFound) {
				t.Fatalf("Resolve(%q) error %v should not be ErrNotFound", tt.did, err)
			}
		})
	}
}

func TestResolveCache(t *testing.T) {
	srv := newDocServer(t)
	did := srv.webDID()
	missing := did + ":missing"
	srv.serve("/.well-known/did.json", 200, didDocJSON(did))
	r := srv.testResolver(Options{CacheTTL: time.Minute})
	now := time.Unix(1_700_000_000, 0)
	r.now = func() time.Time { return now }

	resolve := func(d string) (*Document, error) { return r.Resolve(context.Background(), d) }
	doc, err := resolve(did)
	if err != nil {
		t.Fatal(err)
	}
	doc.AlsoKnownAs[0] = "mutated by caller"
	again, err := resolve(did)
	if err != nil || again.Handle() != "h.example" {
		t.Fatalf("cached document was shared or lost: %+v, %v", again, err)
	}
	if n := srv.hitCount("/.well-known/did.json"); n != 1 {
		t.Fatalf("hits after cached resolve = %d, want 1", n)
	}
	now = now.Add(time.Minute)
	if _, err := resolve(did); err != nil {
		t.Fatal(err)
	}
	if n := srv.hitCount("/.well-known/did.json"); n != 2 {
		t.Fatalf("hits after TTL = %d, want 2", n)
	}

	for range 2 {
		if _, err := resolve(missing); !errors.Is(err, ErrNotFound) {
			t.Fatalf("missing: %v", err)
		}
	}
	if n := srv.hitCount("/missing/did.json"); n != 1 {
		t.Fatalf("miss hits = %d, want 1 (misses are cached)", n)
	}
	now = now.Add(missTTL - time.Second)
	_, _ = resolve(missing)
	if n := srv.hitCount("/missing/did.json"); n != 1 {
		t.Fatalf("miss hits before miss TTL = %d, want 1", n)
	}
	now = now.Add(time.Second)
	_, _ = resolve(missing)
	if n := srv.hitCount("/missing/did.json"); n != 2 {
		t.Fatalf("miss hits after miss TTL = %d, want 2", n)
	}
}

func TestResolveCoalesces(t *testing.T) {
	srv := newDocServer(t)
	did := srv.webDID()
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	srv.handle("/.well-known/did.json", func(w http.ResponseWriter, _ *http.Request) {
		arrived <- struct{}{}
		<-release
		fmt.Fprint(w, didDocJSON(did))
	})
	r := srv.testResolver(Options{})

	const callers = 8
	errs := make(chan error, callers)
	go func() {
		_, err := r.Resolve(context.Background(), did)
		errs <- err
	}()
	<-arrived
	for range callers - 1 {
		go func() {
			_, err := r.Resolve(context.Background(), did)
			errs <- err
		}()
	}
	close(release)
	for range callers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.hitCount("/.well-known/did.json"); n != 1 {
		t.Fatalf("fetches = %d, want 1", n)
	}
}

func TestResolveCallerContext(t *testing.T) {
	srv := newDocServer(t)
	did := srv.webDID()
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	srv.handle("/.well-known/did.json", func(w http.ResponseWriter, _ *http.Request) {
		arrived <- struct{}{}
		<-release
		fmt.Fprint(w, didDocJSON(did))
	})
	r := srv.testResolver(Options{})

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Resolve(cancelled, did); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
	if n := srv.hitCount("/.well-known/did.json"); n != 0 {
		t.Fatalf("a cancelled caller started a fetch")
	}
	// did:key needs no I/O and resolves even with a dead context.
	if _, err := r.Resolve(cancelled, "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"); err != nil {
		t.Fatal(err)
	}

	// A caller that gives up does not kill the shared fetch.
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.Resolve(ctx, did)
		done <- err
	}()
	<-arrived
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned caller: %v", err)
	}
	close(release)
	if _, err := r.Resolve(context.Background(), did); err != nil {
		t.Fatalf("fetch after an abandoned caller: %v", err)
	}
	if n := srv.hitCount("/.well-known/did.json"); n != 1 {
		t.Fatalf("fetches = %d, want 1", n)
	}
}

func TestRedirects(t *testing.T) {
	srv := newDocServer(t)
	did := srv.webDID()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, didDocJSON(did+":down"))
	}))
	defer plain.Close()
	srv.serve("/real/did.json", 200, didDocJSON(did+":same"))
	srv.handle("/same/did.json", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/real/did.json", http.StatusFound)
	})
	srv.handle("/down/did.json", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/did.json", http.StatusFound)
	})
	srv.handle("/loop/did.json", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop/did.json", http.StatusFound)
	})
	r := srv.testResolver(Options{})
	if _, err := r.Resolve(context.Background(), did+":same"); err != nil {
		t.Fatalf("same-host redirect: %v", err)
	}
	for _, d := range []string{did + ":down", did + ":loop"} {
		if _, err := r.Resolve(context.Background(), d); err == nil {
			t.Fatalf("Resolve(%q) followed a refused redirect", d)
		}
	}
}

func TestTLSVerification(t *testing.T) {
	srv := newDocServer(t)
	did := srv.webDID()
	srv.serve("/.well-known/did.json", 200, didDocJSON(did))
	for name, opts := range map[string]Options{
		"system roots only":  {AllowPrivateAddresses: true},
		"another CA trusted": {AllowPrivateAddresses: true, RootCAs: unrelatedCA(t)},
	} {
		t.Run(name, func(t *testing.T) {
			var certErr x509.UnknownAuthorityError
			_, err := New(opts).Resolve(context.Background(), did)
			if !errors.As(err, &certErr) {
				t.Fatalf("untrusted certificate: %v", err)
			}
		})
	}
}

// unrelatedCA returns a pool holding a freshly minted self-signed CA that
// signed nothing the test servers present.
func unrelatedCA(t *testing.T) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "unrelated test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}
