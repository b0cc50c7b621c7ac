package redistest

import (
	"errors"
	"os"
	"syscall"
)

// alive reports whether a process with pid exists (and is not a zombie
// we could still reap: spawned processes are always waited for).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err == nil {
		b, rerr := os.ReadFile("/proc/" + itoa(pid) + "/stat")
		return rerr == nil && !isZombie(b)
	}
	return !errors.Is(err, syscall.ESRCH)
}

func isZombie(stat []byte) bool {
	// The state follows the parenthesised command name.
	for i := len(stat) - 1; i >= 0; i-- {
		if stat[i] == ')' && i+2 < len(stat) {
			return stat[i+2] == 'Z'
		}
	}
	return false
}
