//go:build unix && !linux

package redisconn

import "syscall"

// procAttr puts a spawned server in its own process group, so killGroup
// reaches it and anything it forked. Only Linux has a parent-death signal:
// here a server outlives an rlctl that is killed outright (Close and an
// interrupt still stop it).
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills the process group that pid leads.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
