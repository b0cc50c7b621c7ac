package redistest

import "os"

// Alive reports whether pid is a running process: on Windows, whether a
// handle to it can still be opened.
func Alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
