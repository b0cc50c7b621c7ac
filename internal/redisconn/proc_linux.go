package redisconn

import "syscall"

// procAttr puts a spawned server in its own process group, so killGroup
// reaches it and anything it forked, with SIGKILL as its parent-death
// signal so it cannot outlive rlctl.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the process group that pid leads.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
