//go:build !unix

package load

import (
	"errors"
	"fmt"
	"time"
)

// ProcessCPU is only available on Unix systems (getrusage).
func ProcessCPU() (time.Duration, error) {
	return 0, fmt.Errorf("load: process CPU time: %w", errors.ErrUnsupported)
}

// RaiseFDLimit is only available on Unix systems (setrlimit).
func RaiseFDLimit() (uint64, error) {
	return 0, fmt.Errorf("load: raising the file descriptor limit: %w", errors.ErrUnsupported)
}

// FDLimit is only available on Unix systems (getrlimit).
func FDLimit() (uint64, error) {
	return 0, fmt.Errorf("load: file descriptor limit: %w", errors.ErrUnsupported)
}
