package transport

import (
	"syscall"
	"unsafe"
)

// peekByte peeks at one byte of a socket's input (recv with MSG_PEEK). It calls the system call
// directly: syscall.Recvfrom would put a 112-byte address buffer and two more frames on the stack
// of an idle connection's goroutine, where every byte counts (see rawReader).
func peekByte(fd uintptr, b *[1]byte) error {
	_, _, errno := syscall.Syscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1, syscall.MSG_PEEK, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
