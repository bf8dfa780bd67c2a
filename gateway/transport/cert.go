package transport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

const (
	generatedCertName = "cert.pem"
	generatedKeyName  = "key.pem"
	// generatedCertLifetime is the validity of a self-signed certificate;
	// an expired one is replaced on the next start.
	generatedCertLifetime = 365 * 24 * time.Hour
)

// LoadOrCreateCertificate returns the TLS certificate for the IRC listener.
//
// With certFile and keyFile set it loads that pair. Otherwise it uses
// dir/cert.pem and dir/key.pem, creating them the first time: a self-signed
// ECDSA P-256 certificate for hosts (DNS names or IP addresses; "localhost"
// when hosts is empty), with the key file at mode 0600. A stored pair is
// reused until it expires or no longer covers every host, then replaced.
func LoadOrCreateCertificate(dir string, certFile, keyFile string, hosts []string) (tls.Certificate, error) {
	if certFile != "" || keyFile != "" {
		if certFile == "" || keyFile == "" {
			return tls.Certificate{}, errors.New("transport: certificate and key files must be given together")
		}
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("transport: load certificate %s: %w", certFile, err)
		}
		return cert, nil
	}
	if len(hosts) == 0 {
		hosts = []string{"localhost"}
	}
	return loadOrCreateSelfSigned(dir, hosts, time.Now())
}

func loadOrCreateSelfSigned(dir string, hosts []string, now time.Time) (tls.Certificate, error) {
	certPath := filepath.Join(dir, generatedCertName)
	keyPath := filepath.Join(dir, generatedKeyName)

	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	switch {
	case err == nil:
		if stillUsable(cert.Leaf, hosts, now) {
			return cert, nil
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		return tls.Certificate{}, fmt.Errorf("transport: load generated certificate in %s: %w", dir, err)
	}

	certPEM, keyPEM, err := selfSigned(hosts, now)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tls.Certificate{}, fmt.Errorf("transport: create certificate directory: %w", err)
	}
	if err := writeFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return tls.Certificate{}, err
	}
	if err := writeFileAtomic(certPath, certPEM, 0o644); err != nil {
		return tls.Certificate{}, err
	}
	cert, err = tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("transport: parse generated certificate: %w", err)
	}
	return cert, nil
}

// stillUsable reports whether a stored certificate is valid at now (with a
// day to spare) and names every host.
func stillUsable(leaf *x509.Certificate, hosts []string, now time.Time) bool {
	if leaf == nil || now.Before(leaf.NotBefore) || now.Add(24*time.Hour).After(leaf.NotAfter) {
		return false
	}
	for _, h := range hosts {
		if leaf.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

// selfSigned creates a certificate and key in PEM form.
func selfSigned(hosts []string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("transport: generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, fmt.Errorf("transport: generate serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: hosts[0]},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(generatedCertLifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("transport: create certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("transport: encode key: %w", err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	return certPEM, keyPEM, nil
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it into place, so a crash never leaves a half-written file.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("transport: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return fmt.Errorf("transport: write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("transport: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("transport: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("transport: write %s: %w", path, err)
	}
	return nil
}
