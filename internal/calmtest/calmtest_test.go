package calmtest

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// Retry calls its try until one is not busy, and no more than it was
// told, handing back what the last try said.
func TestRetryStopsAtTheFirstCalmTry(t *testing.T) {
	for _, tt := range []struct {
		tries, calmAt, calls int
		want                 string
	}{
		{tries: 3, calmAt: 1, calls: 1, want: ""},
		{tries: 3, calmAt: 2, calls: 2, want: ""},
		{tries: 3, calmAt: 9, calls: 3, want: "busy 3"},
		{tries: 1, calmAt: 9, calls: 1, want: "busy 1"},
	} {
		calls := 0
		got := Retry(t, tt.tries, func(n int) string {
			calls++
			if n != calls {
				t.Errorf("try told %d on call %d", n, calls)
			}
			if n >= tt.calmAt {
				return ""
			}
			return fmt.Sprintf("busy %d", n)
		})
		if got != tt.want || calls != tt.calls {
			t.Errorf("%+v: returned %q after %d calls", tt, got, calls)
		}
	}
}

// A retry runs while no other test's try does: first tries share the
// machine, a retry waits for them and holds new ones off.
func TestRetryRunsAlone(t *testing.T) {
	var running, most atomic.Int32
	var overlapped atomic.Bool
	t.Run("tests", func(t *testing.T) {
		for g := range 4 {
			t.Run(fmt.Sprint(g), func(t *testing.T) {
				t.Parallel()
				for range 5 {
					Retry(t, 2, func(n int) string {
						now := running.Add(1)
						defer running.Add(-1)
						for {
							m := most.Load()
							if now <= m || most.CompareAndSwap(m, now) {
								break
							}
						}
						time.Sleep(5 * time.Millisecond)
						if n > 1 && (now != 1 || running.Load() != 1) {
							overlapped.Store(true)
						}
						if g%2 == 0 && n == 1 {
							return "busy"
						}
						return ""
					})
				}
			})
		}
	})
	if overlapped.Load() {
		t.Error("a retry ran beside another test's try")
	}
	if most.Load() < 2 {
		t.Errorf("at most %d tries at once: first tries did not share the machine", most.Load())
	}
}

// A try that reaches Retry again for the same test runs inside its own
// turn instead of waiting on it forever.
func TestRetryInsideATry(t *testing.T) {
	inner := 0
	Retry(t, 2, func(n int) string {
		Retry(t, 2, func(int) string { inner++; return "" })
		if n == 1 {
			return "busy"
		}
		return ""
	})
	if inner != 2 {
		t.Errorf("inner try ran %d times, want once per outer try", inner)
	}
}

// Calm is timers on time for the whole span asked: never seen when every
// timer counts as late, and not before the span when none does.
func TestWaitCalm(t *testing.T) {
	start := time.Now()
	if worst, ok := waitCalm(0, 50*time.Millisecond, 100*time.Millisecond); ok || worst <= 0 {
		t.Errorf("every timer late: calm %v, worst %v", ok, worst)
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Errorf("gave up after %v, before its patience", took)
	}
	start = time.Now()
	if _, ok := waitCalm(time.Hour, 50*time.Millisecond, time.Hour); !ok {
		t.Error("no timer late: not calm")
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Errorf("calm after %v, before the span", took)
	}
}
