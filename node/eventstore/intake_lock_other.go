//go:build !unix

package eventstore

import "os"

// lockFile does nothing where there is no advisory lock.
func lockFile(*os.File) error { return nil }
