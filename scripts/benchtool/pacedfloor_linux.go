package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rlctl/rlctl/internal/rawsock"
)

// pacedFloor measures the shape a paced run could have if a request were
// split into its send and its answer: one goroutine wakes at most every
// 200 µs (rlctl's minWake), writes every request then due, each on its own
// gateway's connection (50, as the bench's gateways), back to back, then
// reads their replies. Redis then serves each wake's requests in one
// wake of its own, where rlctl's workers, sending one at a time, wake it
// once per request. It sends rate requests a second for d, the EVALSHA
// redis-benchmark sends, and prints CPU µs per request (user+sys of this
// process over the loop) and the send lag p99 in ms.
func pacedFloor(addr, sha string, rate int, d time.Duration) error {
	const gateways = 50
	conns := make([]net.Conn, gateways)
	replies := make([]*bufio.Reader, gateways)
	for i := range conns {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer nc.Close()
		conns[i] = rawsock.Wrap(nc)
		replies[i] = bufio.NewReader(conns[i])
	}
	reqs := make([][]byte, 1000)
	for i := range reqs {
		key := fmt.Sprintf("rl:fw:{%012d}", i)
		reqs[i] = fmt.Appendf(nil, "*7\r\n$7\r\nEVALSHA\r\n$%d\r\n%s\r\n$1\r\n1\r\n$%d\r\n%s\r\n$9\r\n100000000\r\n$5\r\n60000\r\n$1\r\n1\r\n",
			len(sha), sha, len(key), key)
	}
	sl, err := newTimerfd()
	if err != nil {
		return err
	}
	defer sl.f.Close()
	per := time.Second / time.Duration(rate)
	total := int(d / per)
	lags := make([]time.Duration, 0, total)
	cpu0 := cpuTime()
	start := time.Now()
	var lastWake time.Duration
	for next := 0; next < total; {
		now := time.Since(start)
		first := next
		for ; next < total && time.Duration(next)*per <= now; next++ {
			lags = append(lags, time.Since(start)-time.Duration(next)*per)
			if _, err := conns[next%gateways].Write(reqs[next%len(reqs)]); err != nil {
				return err
			}
		}
		for h := first; h < next; h++ {
			if err := readReply(replies[h%gateways]); err != nil {
				return err
			}
		}
		lastWake = now
		wake := max(time.Duration(next)*per, lastWake+200*time.Microsecond)
		if w := wake - time.Since(start); w > 0 && next < total {
			sl.sleep(w)
		}
	}
	cpu := cpuTime() - cpu0
	slices.Sort(lags)
	fmt.Printf("%.1f %.3f\n", float64(cpu.Microseconds())/float64(total), float64(lags[len(lags)*99/100])/float64(time.Millisecond))
	return nil
}

// readReply reads one reply of the script: an array of integers, or an
// error reply, returned as an error.
func readReply(r *bufio.Reader) error {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return err
	}
	switch line[0] {
	case '-':
		return fmt.Errorf("redis: %s", line[1:len(line)-2])
	case '*':
		n, err := strconv.Atoi(string(line[1 : len(line)-2]))
		if err != nil {
			return fmt.Errorf("bad reply %q", line)
		}
		for range n {
			if _, err := r.ReadSlice('\n'); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unexpected reply %q", line)
}

// timerfd sleeps precisely, as rlctl's pacer does: a timerfd waited on
// in the netpoller.
type timerfd struct {
	f  *os.File
	rc syscall.RawConn
	fd int
	b  [8]byte
}

func newTimerfd() (*timerfd, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	t := &timerfd{f: os.NewFile(uintptr(fd), "timerfd"), fd: fd}
	if t.rc, err = t.f.SyscallConn(); err != nil {
		t.f.Close()
		return nil, err
	}
	return t, nil
}

func (t *timerfd) sleep(d time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	syscall.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(t.fd), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	t.rc.Read(func(fd uintptr) bool {
		_, e := rawsock.ReadFD(fd, t.b[:])
		return e != syscall.EAGAIN
	})
}

// cpuTime is this process's user+sys time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
