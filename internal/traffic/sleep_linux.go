package traffic

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timerfd sleeps on a Linux timerfd read through the netpoller: the
// kernel's high-resolution timer makes the fd readable on time (no timer
// slack), and epoll returns on readiness at once, where its own timeout
// would round up to the millisecond. The goroutine parks like any network
// wait, so it holds no thread or P while it sleeps, which a nanosleep
// would (and the P's other goroutines would wait for it).
type timerfd struct {
	f  *os.File
	fd int
}

// newSleeper returns a timerfd sleeper, or the runtime's timer where no
// timerfd can be made.
func newSleeper() sleeper {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return coarse{}
	}
	// A non-blocking fd makes a pollable File; fd stays usable for
	// timerfd_settime (File.Fd would turn it blocking).
	return &timerfd{f: os.NewFile(uintptr(fd), "timerfd"), fd: fd}
}

func (t *timerfd) sleep(d time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(t.fd, 0, &spec, nil); err != nil {
		time.Sleep(d)
		return
	}
	var expirations [8]byte
	if _, err := t.f.Read(expirations[:]); err != nil {
		time.Sleep(d)
	}
}

func (t *timerfd) close() { t.f.Close() }
