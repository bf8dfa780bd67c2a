package node

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// caPEM is a fresh self-signed CA certificate, PEM-encoded.
func caPEM(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "relay test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// TestRegistrationRelayFiles: the relay's password and CAs are read from their files, and a
// missing, empty or unreadable file is an error naming it.
func TestRegistrationRelayFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pw := write("pw", "s3cret\nignored\n")
	empty := write("empty", "\n")
	notPEM := write("ca.txt", "not a certificate")
	ca := write("ca.pem", caPEM(t))
	for _, tc := range []struct {
		name, pwFile, caFile, wantErr string
	}{
		{name: "none"},
		{name: "password and CAs", pwFile: pw, caFile: ca},
		{name: "missing password file", pwFile: filepath.Join(dir, "nope"), wantErr: "smtp password"},
		{name: "empty password file", pwFile: empty, wantErr: "empty first line"},
		{name: "CA file without a certificate", caFile: notPEM, wantErr: "no PEM certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.SMTPPasswordFile, cfg.SMTPCAFile = tc.pwFile, tc.caFile
			reg, err := registrationRelay(cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (tc.pwFile != "") != (reg.Email.Relay.Password == "s3cret") || (tc.caFile != "") != (reg.Email.Relay.RootCAs != nil) {
				t.Errorf("password %q, CAs %v", reg.Email.Relay.Password, reg.Email.Relay.RootCAs)
			}
		})
	}
}
