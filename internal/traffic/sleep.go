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
// cancellation is still seen within preciseSpan. A paced run's worker
// waits about workers/rate for its next hit (10 ms at 5,000/s with 50
// workers): a span shorter than that woke it twice per request, once for
// the timer and once for the sleeper, and the timer's wake also woke a
// second thread.
const preciseSpan = 50 * time.Millisecond

// spinBelow is the wait under which the pacer yields in a loop instead of
// sleeping: a precise sleep costs about 25 µs of CPU (the thread's sleep
// and wake), more than spinning that long.
const spinBelow = 25 * time.Microsecond

// minWake bounds how often a run wakes to send, so its cost stays small at
// any rate: up to 5,000 requests/s each leaves on time; above, each wake
// sends the requests due since the last, at most minWake late (see
// schedule.take and waker). A wake per request would spend CPU that the
// target under test may share, and wake the target for each request.
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
