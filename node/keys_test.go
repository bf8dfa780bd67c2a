package node

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestServerKeyIsCreatedOnceAndKeptPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	k1, err := loadOrCreateServerKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, serverKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("seed file mode %v, want 0600", info.Mode().Perm())
	}
	k2, err := loadOrCreateServerKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(k1, k2) {
		t.Fatal("a second load produced a different key")
	}
	if err := os.Chmod(filepath.Join(dir, serverKeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadOrCreateServerKey(dir); err == nil {
		t.Fatal("a world-readable seed was accepted")
	}
	if err := os.WriteFile(filepath.Join(dir, serverKeyFile), []byte("zz\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadOrCreateServerKey(dir); err == nil {
		t.Fatal("a malformed seed was accepted")
	}
}
