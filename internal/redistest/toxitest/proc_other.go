//go:build !linux

package toxitest

import "syscall"

// procAttr: only Linux has a parent-death signal.
func procAttr() *syscall.SysProcAttr { return nil }
