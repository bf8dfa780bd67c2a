//go:build linux || darwin || freebsd

package node

import "golang.org/x/sys/unix"

const diskStatsSupported = true

// diskStats reads the available and total bytes of the file system holding dir (0, 0 on error).
func diskStats(dir string) (available, size uint64) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize)
}
