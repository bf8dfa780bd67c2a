//go:build unix

package eventstore

import (
	"errors"
	"os"
	"syscall"
)

// errIntakeInUse is lockFile's answer when another process holds the lock.
var errIntakeInUse = errors.New("in use by another process")

// lockFile takes an exclusive advisory lock on f without waiting.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errIntakeInUse
	}
	return err
}
