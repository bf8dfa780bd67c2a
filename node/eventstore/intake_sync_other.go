//go:build !linux

package eventstore

import "os"

// intakeDataSync flushes a segment's written data (fsync where fdatasync is not offered).
func intakeDataSync(f *os.File) error { return f.Sync() }
