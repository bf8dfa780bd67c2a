package node

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// looseModes lists the paths under dir whose modes are not private (directories 0700, files
// 0600).
func looseModes(t *testing.T, dir string) []string {
	t.Helper()
	var loose []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // removed while walking
		}
		info, err := d.Info()
		if err != nil || !(d.IsDir() || d.Type().IsRegular()) {
			return nil
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if info.Mode().Perm() != want {
			loose = append(loose, strings.TrimPrefix(path, dir)+" "+info.Mode().Perm().String())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return loose
}

// TestDataDirIsPrivate: a data directory left 0755/0644 (events.db, the Raft log, the keys) is
// tightened when the node starts, and Raft snapshots written later are tightened too.
func TestDataDirIsPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
	saved := dataDirCheckEvery
	dataDirCheckEvery = 20 * time.Millisecond
	t.Cleanup(func() { dataDirCheckEvery = saved })

	dir := filepath.Join(t.TempDir(), "data")
	first := startNode(t, dir, nil)
	c, _ := guest(t, first, "modes")
	joinChannels(t, c, "#modes")
	first.Close()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(path, 0o755)
		} else if err == nil && d.Type().IsRegular() {
			os.Chmod(path, 0o644)
		}
		return nil
	})
	if len(looseModes(t, dir)) == 0 {
		t.Fatalf("setup left nothing loose")
	}

	n := startNode(t, dir, nil)
	if loose := looseModes(t, dir); len(loose) > 0 {
		t.Fatalf("after start, not private: %v", loose)
	}
	c, _ = guest(t, n, "modes2")
	joinChannels(t, c, "#modes2")
	if err := n.raft.Snapshot(); err != nil {
		t.Fatal(err)
	}
	snapshots, _ := filepath.Glob(filepath.Join(dir, "raft", "snapshots", "*", "state.bin"))
	if len(snapshots) == 0 {
		t.Fatalf("no snapshot written")
	}
	eventually(t, "the snapshot files to be private", func() bool { return len(looseModes(t, dir)) == 0 })
}
