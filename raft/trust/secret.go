package trust

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// PEM block types of the secret file.
const (
	blockCA        = "PALAVER CLUSTER CA"
	blockCAKey     = "PALAVER CLUSTER CA KEY"
	blockCross     = "PALAVER CLUSTER CA CROSS"
	blockGossipKey = "PALAVER GOSSIP KEY"
)

// GossipKeySize is the size of a gossip key: AES-256.
const GossipKeySize = 32

// caLifetime is how long a cluster CA is valid; rotate before it ends.
const caLifetime = 10 * 365 * 24 * time.Hour

// maxSecretFile bounds the secret file read.
const maxSecretFile = 1 << 20

// ErrBadSecret is the error of a secret file that cannot be used.
var ErrBadSecret = errors.New("trust: bad cluster secret")

// CA is one certificate authority of the cluster. Key is nil for a CA kept only to be trusted.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// Secret is a cluster secret: the CAs (primary first), the cross certificates of the primary by
// older CAs, and the gossip keys (newest first).
type Secret struct {
	CAs        []CA
	Cross      []*x509.Certificate
	GossipKeys [][]byte
}

// Generate creates the secret of a new cluster: one CA and one gossip key.
func Generate() (*Secret, error) {
	ca, err := newCA(time.Now())
	if err != nil {
		return nil, err
	}
	key, err := newGossipKey()
	if err != nil {
		return nil, err
	}
	return &Secret{CAs: []CA{ca}, GossipKeys: [][]byte{key}}, nil
}

// Rotate returns a secret with a new primary CA, cross-signed by every CA of s that has a key,
// and a new gossip key, keeping all of s's CAs and keys as trusted.
func (s *Secret) Rotate() (*Secret, error) {
	now := time.Now()
	ca, err := newCA(now)
	if err != nil {
		return nil, err
	}
	key, err := newGossipKey()
	if err != nil {
		return nil, err
	}
	out := &Secret{CAs: append([]CA{ca}, s.CAs...), GossipKeys: append([][]byte{key}, s.GossipKeys...)}
	for _, old := range s.CAs {
		if old.Key == nil {
			continue
		}
		tmpl := *ca.Cert
		tmpl.SerialNumber, err = serial()
		if err != nil {
			return nil, err
		}
		der, err := x509.CreateCertificate(rand.Reader, &tmpl, old.Cert, ca.Cert.PublicKey, old.Key)
		if err != nil {
			return nil, fmt.Errorf("trust: cross-sign the new CA: %w", err)
		}
		cross, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("trust: parse cross certificate: %w", err)
		}
		out.Cross = append(out.Cross, cross)
	}
	return out, nil
}

// Public is s without its CA keys: what a node keeps of the secret.
func (s *Secret) Public() *Secret {
	out := &Secret{Cross: s.Cross, GossipKeys: s.GossipKeys}
	for _, ca := range s.CAs {
		out.CAs = append(out.CAs, CA{Cert: ca.Cert})
	}
	return out
}

// Retire returns a secret with the primary CA and the newest gossip key only.
func (s *Secret) Retire() *Secret {
	return &Secret{CAs: s.CAs[:1], GossipKeys: s.GossipKeys[:1]}
}

func newCA(now time.Time) (CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return CA{}, fmt.Errorf("trust: generate CA key: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return CA{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{Organization: []string{"Palaver cluster"}, CommonName: "Palaver cluster CA " + hex.EncodeToString(sn.Bytes()[:6])},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            1,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return CA{}, fmt.Errorf("trust: create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return CA{}, fmt.Errorf("trust: parse CA certificate: %w", err)
	}
	return CA{Cert: cert, Key: key}, nil
}

func newGossipKey() ([]byte, error) {
	key := make([]byte, GossipKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("trust: generate gossip key: %w", err)
	}
	return key, nil
}

func serial() (*big.Int, error) {
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("trust: serial number: %w", err)
	}
	return sn.Add(sn, big.NewInt(1<<48)), nil // at least 7 bytes, for the CA's name
}

// Marshal renders s as the PEM secret file.
func (s *Secret) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	for _, ca := range s.CAs {
		pem.Encode(&buf, &pem.Block{Type: blockCA, Bytes: ca.Cert.Raw})
		if ca.Key == nil {
			continue
		}
		der, err := x509.MarshalPKCS8PrivateKey(ca.Key)
		if err != nil {
			return nil, fmt.Errorf("trust: encode CA key: %w", err)
		}
		pem.Encode(&buf, &pem.Block{Type: blockCAKey, Bytes: der})
	}
	for _, c := range s.Cross {
		pem.Encode(&buf, &pem.Block{Type: blockCross, Bytes: c.Raw})
	}
	for _, k := range s.GossipKeys {
		pem.Encode(&buf, &pem.Block{Type: blockGossipKey, Bytes: k})
	}
	return buf.Bytes(), nil
}

// Parse reads a secret file and checks it: at least one CA, the primary with its key, keys
// matching their certificates, cross certificates of the primary signed by a CA of the file,
// at least one gossip key of 32 bytes, nothing else.
func Parse(data []byte) (*Secret, error) { return parse(data, false) }

// parse reads the blocks of a secret file; public ones (a node's credentials) hold no CA key.
func parse(data []byte, public bool) (*Secret, error) {
	s := &Secret{}
	rest := bytes.TrimSpace(data)
	for len(rest) > 0 {
		block, next := pem.Decode(rest)
		if block == nil {
			return nil, fmt.Errorf("%w: text that is not a PEM block", ErrBadSecret)
		}
		rest = bytes.TrimSpace(next)
		switch block.Type {
		case blockCA:
			if len(s.Cross) > 0 || len(s.GossipKeys) > 0 {
				return nil, fmt.Errorf("%w: CA certificates come first", ErrBadSecret)
			}
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%w: CA certificate: %w", ErrBadSecret, err)
			}
			if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
				return nil, fmt.Errorf("%w: certificate %q is not a CA", ErrBadSecret, cert.Subject.CommonName)
			}
			s.CAs = append(s.CAs, CA{Cert: cert})
		case blockCAKey:
			if public {
				return nil, fmt.Errorf("%w: a node's credentials hold no CA key", ErrBadSecret)
			}
			if len(s.CAs) == 0 || s.CAs[len(s.CAs)-1].Key != nil || len(s.Cross) > 0 || len(s.GossipKeys) > 0 {
				return nil, fmt.Errorf("%w: a CA key must follow its CA certificate", ErrBadSecret)
			}
			key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%w: CA key: %w", ErrBadSecret, err)
			}
			ca := &s.CAs[len(s.CAs)-1]
			signer, ok := key.(*ecdsa.PrivateKey)
			if !ok || !signer.PublicKey.Equal(ca.Cert.PublicKey) {
				return nil, fmt.Errorf("%w: the key after CA %q is not its ECDSA key", ErrBadSecret, ca.Cert.Subject.CommonName)
			}
			ca.Key = signer
		case blockCross:
			if len(s.GossipKeys) > 0 {
				return nil, fmt.Errorf("%w: gossip keys come last", ErrBadSecret)
			}
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%w: cross certificate: %w", ErrBadSecret, err)
			}
			s.Cross = append(s.Cross, cert)
		case blockGossipKey:
			if len(block.Bytes) != GossipKeySize {
				return nil, fmt.Errorf("%w: a gossip key is %d bytes, not %d", ErrBadSecret, GossipKeySize, len(block.Bytes))
			}
			s.GossipKeys = append(s.GossipKeys, bytes.Clone(block.Bytes))
		default:
			return nil, fmt.Errorf("%w: unknown block %q", ErrBadSecret, block.Type)
		}
	}
	switch {
	case len(s.CAs) == 0:
		return nil, fmt.Errorf("%w: no CA", ErrBadSecret)
	case s.CAs[0].Key == nil && !public:
		return nil, fmt.Errorf("%w: the primary CA has no key", ErrBadSecret)
	case len(s.GossipKeys) == 0:
		return nil, fmt.Errorf("%w: no gossip key", ErrBadSecret)
	}
	primary := s.CAs[0].Cert
	for _, c := range s.Cross {
		if !bytes.Equal(c.RawSubject, primary.RawSubject) || !bytes.Equal(c.RawSubjectPublicKeyInfo, primary.RawSubjectPublicKeyInfo) {
			return nil, fmt.Errorf("%w: a cross certificate is not of the primary CA", ErrBadSecret)
		}
		signed := false
		for _, ca := range s.CAs[1:] {
			if c.CheckSignatureFrom(ca.Cert) == nil {
				signed = true
				break
			}
		}
		if !signed {
			return nil, fmt.Errorf("%w: a cross certificate is signed by no CA of the file", ErrBadSecret)
		}
	}
	return s, nil
}

// Load reads and parses a secret file, refusing one that others can read.
func Load(path string) (*Secret, error) {
	data, err := readPrivate(path, "it holds the cluster's keys")
	if err != nil {
		return nil, err
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// readPrivate reads a file of keys, refusing one that others can read (why says what it holds)
// or one larger than maxSecretFile.
func readPrivate(path, why string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trust: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("trust: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s is mode %04o; %s: chmod 600 it", ErrBadSecret, path, info.Mode().Perm(), why)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return nil, fmt.Errorf("trust: read %s: %w", path, err)
	}
	if len(data) > maxSecretFile {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrBadSecret, path, maxSecretFile)
	}
	return data, nil
}

// Save writes s to path, mode 0600, creating its directory (0700) when missing. It refuses to
// overwrite an existing file.
func (s *Secret) Save(path string) error {
	data, err := s.Marshal()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("trust: create %s: %w", filepath.Dir(path), err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("trust: create %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("trust: write %s: %w", path, err)
	}
	return nil
}

// Fingerprint is the first 8 bytes of a SHA-256, in hex: how keys and certificates are named
// without showing them.
func Fingerprint(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// Describe lists the secret's CAs, cross certificates and gossip keys by fingerprint, never
// their key material.
func (s *Secret) Describe() string {
	var buf bytes.Buffer
	for i, ca := range s.CAs {
		role := "trusted"
		if i == 0 {
			role = "primary"
		}
		withKey := "without key"
		if ca.Key != nil {
			withKey = "with key"
		}
		fmt.Fprintf(&buf, "ca %s sha256:%s %s, %s, valid until %s\n", role, Fingerprint(ca.Cert.Raw), withKey,
			ca.Cert.Subject.CommonName, ca.Cert.NotAfter.UTC().Format(time.DateOnly))
	}
	for _, c := range s.Cross {
		fmt.Fprintf(&buf, "cross sha256:%s primary CA signed by %s\n", Fingerprint(c.Raw), c.Issuer.CommonName)
	}
	for i, k := range s.GossipKeys {
		role := "older"
		if i == 0 {
			role = "newest"
		}
		fmt.Fprintf(&buf, "gossip-key %s sha256:%s\n", role, Fingerprint(k))
	}
	return buf.String()
}
