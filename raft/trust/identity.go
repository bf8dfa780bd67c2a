package trust

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"
)

const (
	// uriScheme names a node in its certificate: palaver-node:<node id>.
	uriScheme = "palaver-node"
	// clockSkew backdates certificates so that a peer whose clock is a little behind accepts them.
	clockSkew = time.Hour
)

// ErrNotClusterPeer is the error of a peer without a certificate of this cluster.
var ErrNotClusterPeer = errors.New("trust: peer is not a node of this cluster")

// Identity is one node's identity in its cluster: its node id, its key and certificate (issued
// from a CA of the cluster when the node enrolled, see Credentials), and what it trusts. It holds
// no CA key.
type Identity struct {
	nodeID        string
	gossipKeys    [][]byte
	roots         *x509.CertPool
	intermediates *x509.CertPool // the cross certificates
	cas           []*x509.Certificate
	cert          *tls.Certificate
	now           func() time.Time
	// pins, when set, names the key each node of the cluster was pinned to (SetPins).
	pins atomic.Pointer[func(node string) (sum []byte, ok bool)]
}

// NewIdentity enrols nodeID with s in memory (a new key, a certificate from s's primary CA) and
// returns its identity; nodes keep their enrolment in their data directory instead (Open).
func NewIdentity(s *Secret, nodeID string) (*Identity, error) {
	c, _, err := Enrol(s, nodeID, nil)
	if err != nil {
		return nil, err
	}
	return c.Identity()
}

// Identity checks that the credentials' certificate names their node, holds their key and
// chains to a CA they trust, and returns the identity they make.
func (c *Credentials) Identity() (*Identity, error) {
	if c.NodeID == "" {
		return nil, errors.New("trust: empty node id")
	}
	id := &Identity{nodeID: c.NodeID, gossipKeys: c.Trust.GossipKeys, roots: x509.NewCertPool(),
		intermediates: x509.NewCertPool(), now: time.Now}
	for _, ca := range c.Trust.CAs {
		id.roots.AddCert(ca.Cert)
		id.cas = append(id.cas, ca.Cert)
	}
	for _, x := range c.Trust.Cross {
		id.intermediates.AddCert(x)
	}
	if !c.Key.PublicKey.Equal(c.Cert.PublicKey) {
		return nil, fmt.Errorf("%w: the node certificate is not of the node key", ErrBadSecret)
	}
	chain := [][]byte{c.Cert.Raw}
	for _, x := range c.Trust.Cross {
		chain = append(chain, x.Raw)
	}
	node, err := id.Verify(chain, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, fmt.Errorf("trust: the node certificate: %w", err)
	}
	if node != c.NodeID {
		return nil, fmt.Errorf("%w: the node certificate names %q, not %q", ErrBadSecret, node, c.NodeID)
	}
	id.cert = &tls.Certificate{Certificate: chain, PrivateKey: c.Key, Leaf: c.Cert}
	return id, nil
}

// NodeID is the node this identity names.
func (id *Identity) NodeID() string { return id.nodeID }

// GossipKeys are the cluster's gossip keys, newest first; nil for a nil identity.
func (id *Identity) GossipKeys() [][]byte {
	if id == nil {
		return nil
	}
	return id.gossipKeys
}

// Certificate is the node's certificate (its chain and key).
func (id *Identity) Certificate() (*tls.Certificate, error) { return id.certificate() }

func (id *Identity) certificate() (*tls.Certificate, error) { return id.cert, nil }

// KeySum is the SHA-256 of the node's public key (its SubjectPublicKeyInfo): what the cluster
// pins the node to.
func (id *Identity) KeySum() []byte { return KeySum(id.cert.Leaf) }

// KeySum is the SHA-256 of a certificate's SubjectPublicKeyInfo.
func KeySum(cert *x509.Certificate) []byte {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return sum[:]
}

// SetPins has Verify refuse a certificate naming a node pinned to another key: pinned returns
// the key sum (KeySum) a node is pinned to, ok false for a node not pinned (yet), whose
// certificate is accepted on its chain alone.
func (id *Identity) SetPins(pinned func(node string) (sum []byte, ok bool)) {
	id.pins.Store(&pinned)
}

// issue creates a certificate for nodeID's key signed by s's primary CA, valid until the CA ends.
func issue(s *Secret, nodeID string, key *ecdsa.PrivateKey, now time.Time) (*x509.Certificate, error) {
	ca := s.CAs[0]
	if ca.Key == nil {
		return nil, fmt.Errorf("%w: the primary CA has no key", ErrBadSecret)
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{Organization: []string{"Palaver cluster"}, CommonName: nodeID},
		URIs:         []*url.URL{NodeURI(nodeID)},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     ca.Cert.NotAfter,
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
	return leaf, nil
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
	node, err := nodeOf(certs[0])
	if err != nil {
		return "", err
	}
	if pins := id.pins.Load(); pins != nil {
		if want, ok := (*pins)(node); ok && !bytes.Equal(want, KeySum(certs[0])) {
			return "", fmt.Errorf("%w: node %q presents a key other than the one the cluster pinned", ErrNotClusterPeer, node)
		}
	}
	return node, nil
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
