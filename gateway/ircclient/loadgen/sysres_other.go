//go:build !unix

package loadgen

import (
	"errors"
	"fmt"
	"time"
)

// ProcessCPU is only available on Unix systems (getrusage).
func ProcessCPU() (time.Duration, error) {
	return 0, fmt.Errorf("loadgen: process CPU time: %w", errors.ErrUnsupported)
}

// RaiseFDLimit is only available on Unix systems (setrlimit).
func RaiseFDLimit() (uint64, error) {
	return 0, fmt.Errorf("loadgen: raising the file descriptor limit: %w", errors.ErrUnsupported)
}

// FDLimit is only available on Unix systems (getrlimit).
func FDLimit() (uint64, error) {
	return 0, fmt.Errorf("loadgen: file descriptor limit: %w", errors.ErrUnsupported)
}
