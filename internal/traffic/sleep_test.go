package traffic

import (
	"testing"
	"time"
)

// The precise sleeper never wakes early: a request sent before its
// intended time would make its latency look shorter than it was.
func TestSleeperNeverEarly(t *testing.T) {
	t.Parallel()
	s := newSleeper()
	defer s.close()
	for _, d := range []time.Duration{30 * time.Microsecond, 100 * time.Microsecond, time.Millisecond, preciseSpan} {
		for range 20 {
			start := time.Now()
			s.sleep(d)
			if got := time.Since(start); got < d {
				t.Fatalf("sleep(%v) returned after %v", d, got)
			}
		}
	}
}
