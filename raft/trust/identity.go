package trust

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"
)

const (
	// uriScheme names a node in its certificate: palaver-node:<node id>.
	uriScheme = "palaver-node"
	// nodeCertLifetime is how long a node certificate is valid; it is renewed in memory
	// nodeCertRenew before it ends.
	nodeCertLifetime = 7 * 24 * time.Hour
	nodeCertRenew    = 24 * time.Hour
	// clockSkew backdates certificates so that a peer whose clock is a little behind accepts them.
	clockSkew = time.Hour
)

// ErrNotClusterPeer is the error of a peer without a certificate of this cluster.
var ErrNotClusterPeer = errors.New("trust: peer is not a node of this cluster")

// Identity is one node's identity in its cluster: its node id, the certificate it issued itself
// from the primary CA, and what it trusts.
type Identity struct {
	nodeID        string
	secret        *Secret
	roots         *x509.CertPool
	intermediates *x509.CertPool // the cross certificates
	now           func() time.Time

	// lock tier 9 (leaf)
	mu   sync.Mutex
	cert *tls.Certificate
}

// NewIdentity issues nodeID's certificate from s's primary CA.
func NewIdentity(s *Secret, nodeID string) (*Identity, error) {
	if nodeID == "" {
		return nil, errors.New("trust: empty node id")
	}
	id := &Identity{nodeID: nodeID, secret: s, roots: x509.NewCertPool(), intermediates: x509.NewCertPool(), now: time.Now}
	for _, ca := range s.CAs {
		id.roots.AddCert(ca.Cert)
	}
	for _, c := range s.Cross {
		id.intermediates.AddCert(c)
	}
	if _, err := id.certificate(); err != nil {
		return nil, err
	}
	return id, nil
}

// NodeID is the node this identity names.
func (id *Identity) NodeID() string { return id.nodeID }

// GossipKeys are the cluster's gossip keys, newest first; nil for a nil identity.
func (id *Identity) GossipKeys() [][]byte {
	if id == nil {
		return nil
	}
	return id.secret.GossipKeys
}

// Certificate is the node's current certificate (its chain and key), renewed as needed.
func (id *Identity) Certificate() (*tls.Certificate, error) { return id.certificate() }

// certificate returns the node certificate, issuing a new one when the current one ends within
// nodeCertRenew.
func (id *Identity) certificate() (*tls.Certificate, error) {
	id.mu.Lock()
	defer id.mu.Unlock()
	now := id.now()
	if id.cert != nil && id.cert.Leaf.NotAfter.Sub(now) > nodeCertRenew {
		return id.cert, nil
	}
	cert, err := issue(id.secret, id.nodeID, now)
	if err != nil {
		return nil, err
	}
	id.cert = cert
	return cert, nil
}

// issue creates a node certificate signed by the primary CA, chained with the primary's cross
// certificates.
func issue(s *Secret, nodeID string, now time.Time) (*tls.Certificate, error) {
	ca := s.CAs[0]
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("trust: generate node key: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(nodeCertLifetime)
	if ca.Cert.NotAfter.Before(notAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{Organization: []string{"Palaver cluster"}, CommonName: nodeID},
		URIs:         []*url.URL{NodeURI(nodeID)},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("trust: issue node certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("trust: parse node certificate: %w", err)
	}
	chain := [][]byte{der}
	for _, c := range s.Cross {
		chain = append(chain, c.Raw)
	}
	return &tls.Certificate{Certificate: chain, PrivateKey: key, Leaf: leaf}, nil
}

// NodeURI is the URI SAN naming a node.
func NodeURI(nodeID string) *url.URL {
	return &url.URL{Scheme: uriScheme, Opaque: url.PathEscape(nodeID)}
}

// nodeOf reads the node id of a certificate.
func nodeOf(cert *x509.Certificate) (string, error) {
	for _, u := range cert.URIs {
		if u.Scheme != uriScheme {
			continue
		}
		id, err := url.PathUnescape(u.Opaque)
		if err != nil || id == "" {
			return "", fmt.Errorf("%w: bad node URI %q", ErrNotClusterPeer, u.String())
		}
		return id, nil
	}
	return "", fmt.Errorf("%w: the certificate names no node", ErrNotClusterPeer)
}

// Verify checks a peer's certificate chain (leaf first, as sent in TLS) against the cluster's
// CAs for usage, and returns the node it names.
func (id *Identity) Verify(rawCerts [][]byte, usage x509.ExtKeyUsage) (string, error) {
	if len(rawCerts) == 0 {
		return "", fmt.Errorf("%w: no certificate", ErrNotClusterPeer)
	}
	certs := make([]*x509.Certificate, len(rawCerts))
	for i, raw := range rawCerts {
		c, err := x509.ParseCertificate(raw)
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrNotClusterPeer, err)
		}
		certs[i] = c
	}
	intermediates := id.intermediates.Clone()
	for _, c := range certs[1:] {
		intermediates.AddCert(c)
	}
	if _, err := certs[0].Verify(x509.VerifyOptions{
		Roots: id.roots, Intermediates: intermediates, CurrentTime: id.now(),
		KeyUsages: []x509.ExtKeyUsage{usage},
	}); err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotClusterPeer, err)
	}
	return nodeOf(certs[0])
}

// ServerConfig is the TLS configuration of a listener of the cluster: TLS 1.3, a client
// certificate of the cluster required, protos offered in ALPN (when any).
func (id *Identity) ServerConfig(protos ...string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		NextProtos: protos,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return id.certificate()
		},
		ClientAuth: tls.RequireAnyClientCert,
		VerifyPeerCertificate: func(rawCerts [][]byte, _ [][]*x509.Certificate) error {
			_, err := id.Verify(rawCerts, x509.ExtKeyUsageClientAuth)
			return err
		},
	}
}

// ClientConfig is the TLS configuration of a connection to another node: TLS 1.3, proto in ALPN
// (when set), the server's certificate checked against the cluster's CAs and, when expect is set,
// required to name that node. Host names are not checked.
func (id *Identity) ClientConfig(proto, expect string) *tls.Config {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return id.certificate()
		},
		// The chain is verified below against the cluster's CAs, by node id, not host name.
		InsecureSkipVerify: true,
		VerifyPeerCertificate: func(rawCerts [][]byte, _ [][]*x509.Certificate) error {
			node, err := id.Verify(rawCerts, x509.ExtKeyUsageServerAuth)
			if err != nil {
				return err
			}
			if expect != "" && node != expect {
				return fmt.Errorf("%w: expected node %q, the certificate names %q", ErrNotClusterPeer, expect, node)
			}
			return nil
		},
	}
	if proto != "" {
		cfg.NextProtos = []string{proto}
	}
	return cfg
}

// PeerNode is the node id of the peer of a connection whose handshake a configuration of this
// package verified.
func PeerNode(cs *tls.ConnectionState) (string, error) {
	if cs == nil || !cs.HandshakeComplete || len(cs.PeerCertificates) == 0 {
		return "", fmt.Errorf("%w: no verified TLS peer", ErrNotClusterPeer)
	}
	return nodeOf(cs.PeerCertificates[0])
}
