package traffic

import (
	"math"
	"time"

	"github.com/rlctl/rlctl/internal/rate"
)

// Pacer schedules an open-model run. Due is the offset at which hit number
// hits (from 0) is meant to go out; Pace turns that into how long to wait
// from elapsed. Both are pure: no clock, no state, so they are tested with
// tables and no sleeping.
type Pacer interface {
	// Pace returns how long to wait from elapsed before sending hit number
	// hits, or stop when the schedule has no such hit.
	Pace(elapsed time.Duration, hits uint64) (wait time.Duration, stop bool)
	// Due returns the intended offset of hit number hits, or ok false when
	// the schedule ends before it.
	Due(hits uint64) (at time.Duration, ok bool)
}

// pace is Pace for any Due: waiting is never negative, because a late hit
// goes out at once (and keeps its intended time, so latency shows the lag).
func pace(p Pacer, elapsed time.Duration, hits uint64) (time.Duration, bool) {
	at, ok := p.Due(hits)
	if !ok {
		return 0, true
	}
	return max(at-elapsed, 0), false
}

// ConstantPacer sends Rate evenly for Duration: hit i at i·Window/Count,
// computed from the absolute offset so the schedule cannot drift.
type ConstantPacer struct {
	Rate     rate.Limit
	Duration time.Duration
}

// Due implements Pacer.
func (c ConstantPacer) Due(hits uint64) (time.Duration, bool) {
	if c.Rate.Count <= 0 || c.Rate.Window <= 0 {
		return 0, false
	}
	// hits·W/C without overflowing for long runs at high rates.
	w, n := uint64(c.Rate.Window), uint64(c.Rate.Count)
	q, r := hits/n, hits%n
	hi := q * w
	if q != 0 && hi/q != w {
		return 0, false
	}
	at := time.Duration(hi + r*w/n)
	if at < 0 || at >= c.Duration {
		return 0, false
	}
	return at, true
}

// Pace implements Pacer.
func (c ConstantPacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	return pace(c, elapsed, hits)
}

// RampPacer raises the rate linearly from From (zero: nothing) to To over
// Duration. The hits sent by t are N(t) = r0·t + (r1−r0)·t²/(2D), so hit i
// is due at the root of N(t) = i.
type RampPacer struct {
	From, To rate.Limit
	Duration time.Duration
}

// Due implements Pacer.
func (r RampPacer) Due(hits uint64) (time.Duration, bool) {
	if r.Duration <= 0 {
		return 0, false
	}
	r0, r1 := r.From.PerSecond(), r.To.PerSecond()
	d := r.Duration.Seconds()
	a := (r1 - r0) / (2 * d)
	i := float64(hits)
	disc := r0*r0 + 4*a*i
	if disc < 0 {
		return 0, false // a falling ramp never reaches this many hits
	}
	// 2i/(r0+√disc) is the smaller root of a·t²+r0·t−i, stable when a → 0.
	den := r0 + math.Sqrt(disc)
	var t float64
	switch {
	case hits == 0:
		t = 0
	case den <= 0:
		return 0, false
	default:
		t = 2 * i / den
	}
	at := time.Duration(t * float64(time.Second))
	if math.IsNaN(t) || t >= d || at >= r.Duration {
		return 0, false
	}
	return at, true
}

// Pace implements Pacer.
func (r RampPacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	return pace(r, elapsed, hits)
}

// BurstPacer fires Size hits at once at the start of every Every, idle in
// between, for Duration.
type BurstPacer struct {
	Size     uint64
	Every    time.Duration
	Duration time.Duration
}

// Due implements Pacer.
func (b BurstPacer) Due(hits uint64) (time.Duration, bool) {
	if b.Size == 0 || b.Every <= 0 {
		return 0, false
	}
	k := hits / b.Size
	if k > uint64(b.Duration/b.Every) {
		return 0, false
	}
	at := time.Duration(k) * b.Every
	if at >= b.Duration {
		return 0, false
	}
	return at, true
}

// Pace implements Pacer.
func (b BurstPacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	return pace(b, elapsed, hits)
}
