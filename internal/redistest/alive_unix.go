//go:build unix

package redistest

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"syscall"
)

// Alive reports whether pid is a running process, not a zombie: tests use
// it to check that spawned servers are gone when they should be.
func Alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return !errors.Is(err, syscall.ESRCH)
	}
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
	if err != nil {
		return runtime.GOOS != "linux" // elsewhere no /proc tells a zombie
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
