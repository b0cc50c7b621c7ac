package calmtest

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

const (
	// stall is a timer firing this much late or more: far beyond a
	// crowded but working machine (under 10ms with twice as many busy
	// loops as cores), the size of the stalls that spoil a measurement.
	stall = 10 * time.Millisecond
	// calmFor is how long timers must fire on time before a retry.
	calmFor = 250 * time.Millisecond
	// patience bounds the wait for calm; a retry starts after it anyway.
	patience = 5 * time.Second
	// gapPatience bounds the wait for a gap between the other tries. In a
	// binary where nearly every test retries (verify), under load no gap
	// came within 5s, so the retry then runs beside them, after a short
	// wait rather than a long one.
	gapPatience = 2 * time.Second
)

var (
	// turns is held shared by first tries and exclusively by retries.
	turns sync.RWMutex
	// inside marks the tests running a try. A test's tries share its
	// turn: a try that reaches Retry again (a helper built on another)
	// runs in the turn it holds instead of waiting on itself, and so
	// does a try from another goroutine of the same test.
	mu     sync.Mutex
	inside = map[testing.TB]bool{}
)

// Retry calls try with 1, 2, … until it returns "" or it has been called
// tries times, and returns what the last call returned. A non-empty return
// says why the machine was too busy for that try to measure; it is
// logged. The caller decides what a last busy try means, usually a
// failure that names it. A try must not wait on another test's Retry.
func Retry(t testing.TB, tries int, try func(n int) (busy string)) string {
	t.Helper()
	for n := 1; ; n++ {
		busy := turn(t, n > 1, func() string { return try(n) })
		if busy == "" || n >= tries {
			return busy
		}
		t.Logf("try %d: %s", n, busy)
	}
}

// turn runs f in its turn: shared with other first tries, or alone and
// after calm for a retry.
func turn(t testing.TB, alone bool, f func() string) string {
	mu.Lock()
	nested := inside[t]
	inside[t] = true
	mu.Unlock()
	if nested {
		return f()
	}
	defer func() {
		mu.Lock()
		delete(inside, t)
		mu.Unlock()
	}()
	if !alone {
		turns.RLock()
		defer turns.RUnlock()
		return f()
	}
	// Neither wait holds anyone off: the other tries go on meanwhile (a
	// retry that blocked new tries while it waited for those in flight
	// doubled verify's time), and the turn is taken in a gap between them.
	start := time.Now()
	worst, calm := waitCalm(stall, calmFor, patience)
	calmed := time.Since(start)
	waited := func() time.Duration { return (time.Since(start) - calmed).Round(time.Millisecond) }
	why := fmt.Sprintf("after %v for calm", calmed.Round(time.Millisecond))
	if !calm {
		why = fmt.Sprintf("though timers still fired up to %v late after %v", worst.Round(time.Millisecond), patience)
	}
	for !turns.TryLock() {
		if time.Since(start)-calmed > gapPatience {
			turns.RLock()
			defer turns.RUnlock()
			t.Logf("again %s, beside other tries: none left a gap in %v", why, waited())
			return f()
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer turns.Unlock()
	t.Logf("again %s, alone after %v for a gap between the other tries", why, waited())
	return f()
}

// waitCalm returns once timers of a millisecond have fired less than
// stall late for calmFor in a row, or after patience with ok false and
// the worst lateness seen.
func waitCalm(stall, calmFor, patience time.Duration) (worst time.Duration, ok bool) {
	start := time.Now()
	since := start
	for {
		late := tick()
		now := time.Now()
		if late >= stall {
			since = now
			worst = max(worst, late)
		}
		if now.Sub(since) >= calmFor {
			return worst, true
		}
		if now.Sub(start) >= patience {
			return worst, false
		}
	}
}

// Watch starts timing 1ms timers, as Retry does before a retry, and
// returns a stop that ends the watch and returns the latest any fired: the
// longest stall of the test binary (or the machine) while it watched,
// wherever it fell, not only where the code under test happened to look.
func Watch() (stop func() time.Duration) {
	stalls := WatchStalls()
	return func() time.Duration { return stalls().Worst }
}

// Stalls are the stretches of a watch in which its timers fired 1ms late
// or more: where the test binary (or the machine) stood still. A timer's
// usual lateness (tens of microseconds) is no stall.
type Stalls struct {
	// Worst is the latest any timer fired.
	Worst time.Duration
	spans []span
}

// span is a stretch in which the watch stood still: it ended at end, and
// lasted late.
type span struct {
	end  time.Time
	late time.Duration
}

// Within is how much of [from, to] the watch saw stand still: the time a
// measurement over that stretch waited on the binary, not on what it
// measured.
func (s Stalls) Within(from, to time.Time) time.Duration {
	var in time.Duration
	for _, sp := range s.spans {
		start := sp.end.Add(-sp.late)
		if lo, hi := maxTime(start, from), minTime(sp.end, to); hi.After(lo) {
			in += hi.Sub(lo)
		}
	}
	return in
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// WatchStalls is Watch that keeps where each stall fell; stop returns the
// same Stalls however often it is called.
func WatchStalls() (stop func() Stalls) {
	done := make(chan struct{})
	res := make(chan Stalls, 1)
	go func() {
		var s Stalls
		for {
			select {
			case <-done:
				res <- s
				return
			default:
				late := tick()
				s.Worst = max(s.Worst, late)
				if late >= time.Millisecond {
					s.spans = append(s.spans, span{end: time.Now(), late: late})
				}
			}
		}
	}()
	return sync.OnceValue(func() Stalls {
		close(done)
		return <-res
	})
}

// tick sleeps 1ms and returns how late it woke.
func tick() time.Duration {
	before := time.Now()
	time.Sleep(time.Millisecond)
	return time.Since(before) - time.Millisecond
}
