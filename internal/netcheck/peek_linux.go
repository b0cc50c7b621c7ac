package netcheck

import (
	"syscall"
	"unsafe"
)

// peek is recv(fd, b, MSG_PEEK|MSG_DONTWAIT). The call never blocks, so it
// goes as a raw system call, without the scheduler's bookkeeping for one
// that might: it runs before every decision.
func peek(fd uintptr, b *[1]byte) (int, syscall.Errno) {
	n, _, err := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	return int(n), err
}
