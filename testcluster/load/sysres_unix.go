//go:build unix

package load

import (
	"fmt"
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time (user plus system) this process has used
// so far, from getrusage(RUSAGE_SELF). Children are not included, so a
// server started with Spawn is not counted.
func ProcessCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("load: getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// RaiseFDLimit raises this process's soft RLIMIT_NOFILE to its hard limit
// and returns the resulting soft limit. (The Go runtime already does this
// at start-up on most systems; doing it explicitly makes the limit the
// benchmark runs with visible and independent of that behaviour.)
func RaiseFDLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("load: getrlimit(RLIMIT_NOFILE): %w", err)
	}
	if lim.Cur >= lim.Max {
		return uint64(lim.Cur), nil
	}
	raised := lim
	raised.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
		return uint64(lim.Cur), fmt.Errorf("load: setrlimit(RLIMIT_NOFILE, %d): %w", raised.Cur, err)
	}
	return uint64(raised.Cur), nil
}

// FDLimit returns this process's soft RLIMIT_NOFILE.
func FDLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("load: getrlimit(RLIMIT_NOFILE): %w", err)
	}
	return uint64(lim.Cur), nil
}
