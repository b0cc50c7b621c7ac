//go:build !linux

package main

import (
	"errors"
	"time"
)

// pacedFloor needs Linux's timerfd for its precise wakes.
func pacedFloor(addr, sha string, rate int, d time.Duration) error {
	return errors.New("benchtool pacedfloor runs on Linux only")
}
