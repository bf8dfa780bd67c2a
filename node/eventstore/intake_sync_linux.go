package eventstore

import (
	"os"
	"syscall"
)

// intakeDataSync flushes a segment's written data: fdatasync, since a segment's size and blocks
// never change while it is written (intake.go).
func intakeDataSync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
