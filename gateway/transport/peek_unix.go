//go:build unix && !linux

package transport

import "syscall"

// peekByte peeks at one byte of a socket's input (recv with MSG_PEEK).
func peekByte(fd uintptr, b *[1]byte) error {
	_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
	return err
}
