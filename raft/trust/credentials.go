package trust

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// PEM block types of a node's credentials file, before the public blocks of the secret.
const (
	blockNodeKey  = "PALAVER NODE KEY"
	blockNodeCert = "PALAVER NODE CERTIFICATE"
)

// reissueBefore is how long before its end a node certificate is issued again when the node
// starts with the secret.
const reissueBefore = 30 * 24 * time.Hour

// Credentials are what a node keeps of its cluster identity: its own key, the certificate a CA
// of the cluster issued for that key when the node enrolled, and the public part of the secret
// (the CA certificates, cross certificates and gossip keys). They hold no CA key, so they let
// their holder be this node and no other.
type Credentials struct {
	NodeID string
	Key    *ecdsa.PrivateKey
	Cert   *x509.Certificate
	Trust  *Secret // without CA keys
}

// Enrol makes nodeID's credentials from the secret s: prev's key when prev is the same node's
// (a node keeps its key, to which the cluster pinned it, for good), else a new one; prev's
// certificate while the primary CA of s signed it and it does not end within reissueBefore,
// else a new one from that CA. changed reports whether the result differs from prev.
func Enrol(s *Secret, nodeID string, prev *Credentials) (c *Credentials, changed bool, err error) {
	if nodeID == "" {
		return nil, false, errors.New("trust: empty node id")
	}
	if prev != nil && prev.NodeID != nodeID {
		return nil, false, fmt.Errorf("trust: the credentials are node %q's, not %q's", prev.NodeID, nodeID)
	}
	now := time.Now()
	c = &Credentials{NodeID: nodeID, Trust: s.Public()}
	if prev != nil {
		c.Key, c.Cert = prev.Key, prev.Cert
	} else {
		if c.Key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			return nil, false, fmt.Errorf("trust: generate node key: %w", err)
		}
	}
	if c.Cert == nil || c.Cert.CheckSignatureFrom(s.CAs[0].Cert) != nil || c.Cert.NotAfter.Sub(now) < reissueBefore {
		if c.Cert, err = issue(s, nodeID, c.Key, now); err != nil {
			return nil, false, err
		}
	}
	if prev == nil || !prev.Cert.Equal(c.Cert) {
		return c, true, nil
	}
	was, err := prev.Trust.Marshal()
	if err != nil {
		return nil, false, err
	}
	is, err := c.Trust.Marshal()
	if err != nil {
		return nil, false, err
	}
	return c, !bytes.Equal(was, is), nil
}

// Marshal renders the credentials as PEM: the node key, the node certificate, then the public
// blocks of the secret file.
func (c *Credentials) Marshal() ([]byte, error) {
	key, err := x509.MarshalPKCS8PrivateKey(c.Key)
	if err != nil {
		return nil, fmt.Errorf("trust: encode node key: %w", err)
	}
	public, err := c.Trust.Public().Marshal()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	pem.Encode(&buf, &pem.Block{Type: blockNodeKey, Bytes: key})
	pem.Encode(&buf, &pem.Block{Type: blockNodeCert, Bytes: c.Cert.Raw})
	buf.Write(public)
	return buf.Bytes(), nil
}

// ParseCredentials reads a credentials file: the node key, the node certificate naming its
// node, then CA certificates (no CA key), cross certificates and gossip keys as in the secret.
func ParseCredentials(data []byte) (*Credentials, error) {
	c := &Credentials{}
	rest := bytes.TrimSpace(data)
	for _, want := range []string{blockNodeKey, blockNodeCert} {
		block, next := pem.Decode(rest)
		if block == nil || block.Type != want {
			return nil, fmt.Errorf("%w: node credentials start with the %s and the %s", ErrBadSecret, blockNodeKey, blockNodeCert)
		}
		rest = next
		switch want {
		case blockNodeKey:
			key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%w: node key: %w", ErrBadSecret, err)
			}
			ec, ok := key.(*ecdsa.PrivateKey)
			if !ok {
				return nil, fmt.Errorf("%w: the node key is not an ECDSA key", ErrBadSecret)
			}
			c.Key = ec
		case blockNodeCert:
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%w: node certificate: %w", ErrBadSecret, err)
			}
			node, err := nodeOf(cert)
			if err != nil {
				return nil, fmt.Errorf("%w: node certificate: %w", ErrBadSecret, err)
			}
			c.Cert, c.NodeID = cert, node
		}
	}
	if !c.Key.PublicKey.Equal(c.Cert.PublicKey) {
		return nil, fmt.Errorf("%w: the node certificate is not of the node key", ErrBadSecret)
	}
	trust, err := parse(rest, true)
	if err != nil {
		return nil, err
	}
	c.Trust = trust
	return c, nil
}

// LoadCredentials reads a credentials file, refusing one that others can read. A missing file
// is an error satisfying errors.Is(err, fs.ErrNotExist).
func LoadCredentials(path string) (*Credentials, error) {
	data, err := readPrivate(path, "it holds the node's key")
	if err != nil {
		return nil, err
	}
	c, err := ParseCredentials(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Save writes the credentials to path, mode 0600, replacing the file there in one rename and
// creating its directory (0700) when missing.
func (c *Credentials) Save(path string) error {
	data, err := c.Marshal()
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("trust: create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".credentials-*")
	if err != nil {
		return fmt.Errorf("trust: write %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("trust: write %s: %w", path, err)
	}
	return nil
}
