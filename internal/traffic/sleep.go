package traffic

import "time"

// Go's timers wake at millisecond granularity on Linux (the netpoller
// sleeps in epoll_wait, whose timeout is in milliseconds), so a pacer that
// waits on a timer sends each request 0 to 1 ms after its intended time.
// Latency is measured from the intended time, so that lag was counted
// against the target: at a Redis's 0.1-0.2 ms, it made p50 several times
// too high, and it bunched a millisecond's requests into one burst. The
// pacer therefore waits on a timer only until preciseSpan before a send
// and sleeps the rest on a precise sleeper (see newSleeper); a
// cancellation is still seen within preciseSpan.
const preciseSpan = 2 * time.Millisecond

// spinBelow is the wait under which the pacer yields in a loop instead of
// sleeping: a precise sleep costs about 25 µs of CPU (the thread's sleep
// and wake), more than spinning that long.
const spinBelow = 25 * time.Microsecond

// minWake bounds how often the pacer wakes, so its cost stays small at
// any rate: up to 5,000 requests/s each leaves on time; above, each wake
// sends the requests due since the last, at most minWake late. A wake per
// request would spend CPU that the target under test may share.
const minWake = 200 * time.Microsecond

// A sleeper sleeps short spans precisely. It is used by one goroutine.
type sleeper interface {
	sleep(d time.Duration)
	close()
}

// coarse is the fallback sleeper: the runtime's timer.
type coarse struct{}

func (coarse) sleep(d time.Duration) { time.Sleep(d) }
func (coarse) close()                {}
