//go:build unix && !linux

package netcheck

import "syscall"

// peek is recv(fd, b, MSG_PEEK|MSG_DONTWAIT).
func peek(fd uintptr, b *[1]byte) (int, syscall.Errno) {
	n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	if err == nil {
		return n, 0
	}
	if errno, ok := err.(syscall.Errno); ok {
		return n, errno
	}
	return n, syscall.EIO
}
