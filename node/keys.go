package node

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// serverKeyFile is where a node keeps its ed25519 seed. The private key never leaves this file and
// this process; only the public key is published and replicated.
const serverKeyFile = "server-signing.seed"

// loadOrCreateServerKey reads the node's signing seed from dir, creating it (mode 0600, inside a
// 0700 directory) on first start.
func loadOrCreateServerKey(dir string) (ed25519.PrivateKey, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("key directory: %w", err)
	}
	path := filepath.Join(dir, serverKeyFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		seed := make([]byte, ed25519.SeedSize)
		if _, err := rand.Read(seed); err != nil {
			return nil, fmt.Errorf("server key: %w", err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return loadOrCreateServerKey(dir) // created concurrently: use that one
		}
		if err != nil {
			return nil, fmt.Errorf("server key: %w", err)
		}
		if _, err := f.WriteString(hex.EncodeToString(seed) + "\n"); err != nil {
			f.Close()
			return nil, fmt.Errorf("server key: %w", err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, fmt.Errorf("server key: %w", err)
		}
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("server key: %w", err)
		}
		return ed25519.NewKeyFromSeed(seed), nil
	}
	if err != nil {
		return nil, fmt.Errorf("server key: %w", err)
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("server key: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("server key %s: permissions %v are too open (want 0600)", path, info.Mode().Perm())
	}
	seed, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("server key %s: not a hex-encoded 32-byte seed", path)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}
