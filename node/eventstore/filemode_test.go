package eventstore

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestStoreFilesArePrivate: the database and its -wal and -shm files are 0600 whatever the umask,
// and a store whose files were left readable by others is tightened when it is opened.
func TestStoreFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
	cases := []struct {
		name     string
		existing os.FileMode // 0: a new store
	}{
		{"new store", 0},
		{"existing store left 0644", 0o644},
		{"existing store left 0666", 0o666},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "data", "events.db")
			if tc.existing != 0 {
				s, err := Open(context.Background(), Options{Path: path, NoSync: true, Logger: quietLogger})
				if err != nil {
					t.Fatal(err)
				}
				mustAppend(t, s, newMsg("01FILEMODE00000000000000A1", "#m", at(time.Second), "x"))
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				for _, p := range []string{path, path + "-wal", path + "-shm"} {
					if _, err := os.Stat(p); err == nil {
						if err := os.Chmod(p, tc.existing); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			s, err := Open(context.Background(), Options{Path: path, NoSync: true, Logger: quietLogger})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			mustAppend(t, s, newMsg("01FILEMODE00000000000000A2", "#m", at(2*time.Second), "y"))
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatalf("%s: %v", filepath.Base(p), err)
				}
				if fi.Mode().Perm() != 0o600 {
					t.Errorf("%s has mode %v, want 0600", filepath.Base(p), fi.Mode().Perm())
				}
			}
			if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("created directory mode %v (%v), want 0700", fi.Mode().Perm(), err)
			}
		})
	}
}
