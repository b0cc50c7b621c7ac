package redisconn

import "syscall"

// procAttr puts a spawned server in its own process group, so killGroup
// reaches it and anything it forked, with SIGKILL as its parent-death
// signal so it cannot outlive rlctl.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// parentDeathSignal is set where spawned servers die with rlctl on their
// own (procAttr's Pdeathsig).
const parentDeathSignal = true

// killGroup kills the process group that pid leads.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
