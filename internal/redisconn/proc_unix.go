//go:build unix && !linux

package redisconn

import "syscall"

// procAttr puts a spawned server in its own process group, so killGroup
// reaches it and anything it forked. Only Linux has a parent-death signal:
// here a server outlives an rlctl that is killed outright until the spawn
// directory's reaper kills it (Close and an interrupt stop it at once).
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// parentDeathSignal is set where spawned servers die with rlctl on their
// own; here the spawn directory's reaper kills them.
const parentDeathSignal = false

// killGroup kills the process group that pid leads.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
