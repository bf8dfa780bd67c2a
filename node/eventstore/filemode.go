package eventstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// The store's files hold every message, including those of restricted channels: they are made
// readable by the node's user only (0600), whatever the umask, and an existing store is tightened
// when it is opened. SQLite creates the -wal and -shm files with the database file's mode; they
// are checked again once the database is open.

// privateFileMode is the mode of every file of the store.
const privateFileMode fs.FileMode = 0o600

// makePrivate creates the database file at abs when missing (so SQLite never creates it with the
// umask's mode) and sets the database file and its -wal and -shm files, where they exist, to
// privateFileMode.
func makePrivate(abs string) error {
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, privateFileMode)
	if err != nil {
		return fmt.Errorf("eventstore: open %q: %w", abs, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("eventstore: open %q: %w", abs, err)
	}
	return chmodPrivate(abs, abs+"-wal", abs+"-shm")
}

// chmodPrivate sets each existing path to privateFileMode.
func chmodPrivate(paths ...string) error {
	for _, p := range paths {
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return fmt.Errorf("eventstore: %w", err)
		case !fi.Mode().IsRegular():
			return fmt.Errorf("eventstore: %q is not a regular file", p)
		case fi.Mode().Perm() == privateFileMode:
			continue
		}
		if err := os.Chmod(p, privateFileMode); err != nil {
			return fmt.Errorf("eventstore: make %q private (mode 0600): %w", p, err)
		}
	}
	return nil
}
