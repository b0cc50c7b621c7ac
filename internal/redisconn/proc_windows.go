package redisconn

import "syscall"

// procAttr: Windows has no process groups to kill as one.
func procAttr() *syscall.SysProcAttr { return nil }

// killGroup does nothing on Windows; the process itself is killed.
func killGroup(int) {}
