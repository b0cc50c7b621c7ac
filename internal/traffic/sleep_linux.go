package traffic

import (
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// timerfd sleeps on a Linux timerfd read through the netpoller: the
// kernel's high-resolution timer makes the fd readable on time (no timer
// slack), and epoll returns on readiness at once, where its own timeout
// would round up to the millisecond. The goroutine parks like any network
// wait, so it holds no thread or P while it sleeps, which a nanosleep
// would (and the P's other goroutines would wait for it).
//
// Its calls never block, so they go as raw system calls: one through
// syscall.Syscall would wake the runtime's monitor thread from the idle
// sleep a paced run puts it in, at every wake of the pacer.
type timerfd struct {
	f      *os.File
	rc     syscall.RawConn
	readFn func(fd uintptr) bool // bound once, so a sleep allocates nothing
	spec   unix.ItimerSpec
	armed  bool
	failed bool
}

// newSleeper returns a timerfd sleeper, or the runtime's timer where no
// timerfd can be made.
func newSleeper() sleeper {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return coarse{}
	}
	// A non-blocking fd makes a pollable File; the timer is armed on the
	// fd RawConn gives (File.Fd would turn it blocking).
	t := &timerfd{f: os.NewFile(uintptr(fd), "timerfd")}
	if t.rc, err = t.f.SyscallConn(); err != nil {
		t.f.Close()
		return coarse{}
	}
	t.readFn = t.readFD
	return t
}

// sleep arms the timer from inside RawConn's Read, on its first call:
// Read forgets the readiness seen so far before that call, so a timer
// armed earlier could fire unseen, and one armed then is sure to wake the
// wait. Neither call reads: the first comes before the timer can have
// fired, and the second after the netpoller saw it fire, the only event
// this descriptor has. Its expiration count is left unread, as the next
// arming sets it back to zero; a wake without the timer having fired
// would only end the sleep early, and the waker spins to the instant
// (waker.until).
func (t *timerfd) sleep(d time.Duration) {
	t.spec = unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	t.armed, t.failed = false, false
	if err := t.rc.Read(t.readFn); err != nil || t.failed {
		time.Sleep(d)
	}
}

// readFD arms the timer on its first call and waits; the next call comes
// once the timer fired, and ends the wait.
func (t *timerfd) readFD(fd uintptr) bool {
	if t.armed {
		return true
	}
	t.armed = true
	_, _, e := syscall.RawSyscall6(unix.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&t.spec)), 0, 0, 0)
	t.failed = e != 0
	return t.failed
}

func (t *timerfd) close() { t.f.Close() }
