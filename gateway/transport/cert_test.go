package transport

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLoadOrCreateCertificateGeneratesOnceAndReuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	first, err := LoadOrCreateCertificate(dir, "", "", []string{"irc.example.test", "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, "key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Fatalf("key.pem mode %o, want 600", perm)
	}
	if err := first.Leaf.VerifyHostname("irc.example.test"); err != nil {
		t.Fatal(err)
	}
	if err := first.Leaf.VerifyHostname("127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	if got := first.Leaf.PublicKeyAlgorithm.String(); got != "ECDSA" {
		t.Fatalf("key algorithm %s", got)
	}

	second, err := LoadOrCreateCertificate(dir, "", "", []string{"irc.example.test"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Certificate[0], second.Certificate[0]) {
		t.Fatal("certificate was regenerated instead of reused")
	}

	third, err := LoadOrCreateCertificate(dir, "", "", []string{"other.example.test"})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(first.Certificate[0], third.Certificate[0]) {
		t.Fatal("certificate not regenerated for a new host")
	}
}

func TestLoadOrCreateCertificateReplacesExpired(t *testing.T) {
	dir := t.TempDir()
	hosts := []string{"localhost"}
	now := time.Now()
	first, err := loadOrCreateSelfSigned(dir, hosts, now)
	if err != nil {
		t.Fatal(err)
	}
	later, err := loadOrCreateSelfSigned(dir, hosts, now.Add(generatedCertLifetime))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(first.Certificate[0], later.Certificate[0]) {
		t.Fatal("expired certificate was reused")
	}
}

func TestLoadOrCreateCertificateExplicitFiles(t *testing.T) {
	dir := t.TempDir()
	generated, err := LoadOrCreateCertificate(dir, "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := generated.Leaf.VerifyHostname("localhost"); err != nil {
		t.Fatalf("default host: %v", err)
	}
	certPath, keyPath := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")

	tests := []struct {
		name, cert, key string
		wantErr         bool
	}{
		{"both files", certPath, keyPath, false},
		{"cert only", certPath, "", true},
		{"key only", "", keyPath, true},
		{"missing files", filepath.Join(dir, "nope.pem"), keyPath, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cert, err := LoadOrCreateCertificate(t.TempDir(), tt.cert, tt.key, nil)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && !bytes.Equal(cert.Certificate[0], generated.Certificate[0]) {
				t.Fatal("loaded a different certificate")
			}
		})
	}
}

func TestLoadOrCreateCertificateRefusesCorruptFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key.pem"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateCertificate(dir, "", "", nil); err == nil {
		t.Fatal("corrupt stored certificate accepted")
	}
}
