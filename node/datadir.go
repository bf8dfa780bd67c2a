package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// The data directory holds the node's private key, the Raft log and snapshots (channel keys in
// plain text among them) and every stored message: everything under it is made private to the
// node's user, directories 0700 and files 0600, whatever the umask. An existing directory is
// tightened at start, and a node that cannot tighten it (another user owns it) refuses to start.
// Files that libraries create later (hashicorp/raft writes its snapshots with the umask's mode)
// are tightened again every dataDirCheckEvery.

const (
	privateDirMode  fs.FileMode = 0o700
	privateFileMode fs.FileMode = 0o600
)

// dataDirCheckEvery is how often the running node tightens its data directory again.
var dataDirCheckEvery = 30 * time.Second

// secureDataDir creates dir when missing and makes it and everything under it private. Symbolic
// links are left alone (their targets are not the node's to change).
func secureDataDir(dir string) error {
	if err := os.MkdirAll(dir, privateDirMode); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != dir {
				return nil // removed while walking (a snapshot being replaced)
			}
			return err
		}
		want := privateFileMode
		switch {
		case d.IsDir():
			want = privateDirMode
		case !d.Type().IsRegular():
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if info.Mode().Perm() == want {
			return nil
		}
		if err := os.Chmod(path, want); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("make %s private (mode %04o): %w", path, want, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	return nil
}

// dataDirKeeper tightens the data directory every dataDirCheckEvery until ctx ends.
type dataDirKeeper struct {
	dir string
	log *slog.Logger
}

func (k dataDirKeeper) run(ctx context.Context) {
	runEvery(ctx, dataDirCheckEvery, func() {
		if err := secureDataDir(k.dir); err != nil {
			k.log.Error("keeping the data directory private", "err", err)
		}
	})
}
