package traffic

import (
	"math"
	mathrand "math/rand/v2"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/rate"
)

func TestConstantPacer(t *testing.T) {
	p := ConstantPacer{Rate: rate.Limit{Count: 10, Window: time.Second}, Duration: time.Second}
	tests := []struct {
		name     string
		elapsed  time.Duration
		hits     uint64
		wantWait time.Duration
		wantStop bool
	}{
		{"first hit at once", 0, 0, 0, false},
		{"second hit one period later", 0, 1, 100 * time.Millisecond, false},
		{"on schedule", 250 * time.Millisecond, 3, 50 * time.Millisecond, false},
		{"behind schedule sends now", 900 * time.Millisecond, 2, 0, false},
		{"last hit inside duration", 0, 9, 900 * time.Millisecond, false},
		{"hit at duration stops", 0, 10, 0, true},
		{"far past stops", 0, 1 << 40, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wait, stop := p.Pace(tt.elapsed, tt.hits)
			if wait != tt.wantWait || stop != tt.wantStop {
				t.Errorf("Pace(%v, %d) = %v, %v; want %v, %v", tt.elapsed, tt.hits, wait, stop, tt.wantWait, tt.wantStop)
			}
		})
	}
}

func TestConstantPacerNoDrift(t *testing.T) {
	// 3 per second does not divide a second evenly; the offsets must come
	// from i·W/C, not from summing a rounded period.
	p := ConstantPacer{Rate: rate.Limit{Count: 3, Window: time.Second}, Duration: time.Hour}
	at, ok := p.Due(3 * 1000)
	if !ok || at != 1000*time.Second {
		t.Fatalf("Due(3000) = %v, %v; want 1000s", at, ok)
	}
	at, _ = p.Due(1)
	if at != 333333333 {
		t.Fatalf("Due(1) = %v; want 333.333333ms", at)
	}
}

func TestRampPacer(t *testing.T) {
	// From 0 to 100/s over 10 s: N(t) = 5·t², so 500 hits in all.
	p := RampPacer{To: rate.Limit{Count: 100, Window: time.Second}, Duration: 10 * time.Second}
	tests := []struct {
		hits uint64
		want time.Duration
		stop bool
	}{
		{0, 0, false},
		{5, time.Second, false},
		{20, 2 * time.Second, false},
		{125, 5 * time.Second, false},
		{499, 9989994994, false},
		{500, 0, true},
	}
	for _, tt := range tests {
		at, ok := p.Due(tt.hits)
		if ok == tt.stop || (ok && absDur(at-tt.want) > time.Microsecond) {
			t.Errorf("Due(%d) = %v, %v; want %v, stop %v", tt.hits, at, ok, tt.want, tt.stop)
		}
	}
	// A flat ramp is the constant pacer.
	flat := RampPacer{From: rate.Limit{Count: 10, Window: time.Second}, To: rate.Limit{Count: 10, Window: time.Second}, Duration: time.Second}
	c := ConstantPacer{Rate: rate.Limit{Count: 10, Window: time.Second}, Duration: time.Second}
	for i := uint64(0); i < 12; i++ {
		a, aok := flat.Due(i)
		b, bok := c.Due(i)
		if aok != bok || absDur(a-b) > time.Microsecond {
			t.Errorf("flat ramp Due(%d) = %v,%v; constant %v,%v", i, a, aok, b, bok)
		}
	}
	// Offsets never go backwards.
	var last time.Duration
	for i := uint64(0); ; i++ {
		at, ok := p.Due(i)
		if !ok {
			break
		}
		if at < last {
			t.Fatalf("Due(%d) = %v < Due(%d) = %v", i, at, i-1, last)
		}
		last = at
	}
}

func TestRampPacerDown(t *testing.T) {
	// 100/s falling to 0 over 2 s: N(t) = 100t − 25t², 100 hits in all.
	p := RampPacer{From: rate.Limit{Count: 100, Window: time.Second}, Duration: 2 * time.Second}
	n := 0
	for i := uint64(0); ; i++ {
		if _, ok := p.Due(i); !ok {
			break
		}
		n++
	}
	if n < 99 || n > 100 {
		t.Fatalf("falling ramp scheduled %d hits; want about 100", n)
	}
}

func TestBurstPacer(t *testing.T) {
	p := BurstPacer{Size: 4, Every: time.Second, Duration: 2500 * time.Millisecond}
	tests := []struct {
		elapsed time.Duration
		hits    uint64
		wait    time.Duration
		stop    bool
	}{
		{0, 0, 0, false},
		{0, 3, 0, false},
		{0, 4, time.Second, false},
		{100 * time.Millisecond, 7, 900 * time.Millisecond, false},
		{0, 8, 2 * time.Second, false},
		{0, 11, 2 * time.Second, false},
		{0, 12, 0, true},
	}
	for _, tt := range tests {
		wait, stop := p.Pace(tt.elapsed, tt.hits)
		if wait != tt.wait || stop != tt.stop {
			t.Errorf("Pace(%v, %d) = %v, %v; want %v, %v", tt.elapsed, tt.hits, wait, stop, tt.wait, tt.stop)
		}
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func FuzzPacers(f *testing.F) {
	f.Add(int64(10), int64(time.Second), int64(time.Second), uint64(5))
	f.Add(int64(1), int64(1), int64(1), uint64(0))
	f.Fuzz(func(t *testing.T, count, window, dur int64, hits uint64) {
		r := rate.Limit{Count: count, Window: time.Duration(window)}
		d := time.Duration(dur)
		for _, p := range []Pacer{
			ConstantPacer{Rate: r, Duration: d},
			RampPacer{To: r, Duration: d},
			BurstPacer{Size: uint64(max(count, 0)), Every: time.Duration(window), Duration: d},
		} {
			at, ok := p.Due(hits)
			if ok && (at < 0 || at >= d) {
				t.Fatalf("%T.Due(%d) = %v outside [0, %v)", p, hits, at, d)
			}
			if ok && hits > 0 {
				prev, pok := p.Due(hits - 1)
				if !pok || prev > at {
					t.Fatalf("%T.Due(%d) = %v but Due(%d) = %v, %v", p, hits, at, hits-1, prev, pok)
				}
			}
		}
	})
}

// TestRampPacerMatchesBruteForce compares the closed-form schedule with a
// brute-force one: step time in small increments, accumulate the
// instantaneous rate, and count how many hits are due by each moment.
func TestRampPacerMatchesBruteForce(t *testing.T) {
	rng := mathrand.New(mathrand.NewPCG(1, 2))
	for trial := range 200 {
		from := rate.Limit{Count: rng.Int64N(200), Window: time.Second}
		to := rate.Limit{Count: rng.Int64N(200) + 1, Window: time.Second}
		d := time.Duration(rng.Int64N(int64(3*time.Second))) + 100*time.Millisecond
		p := RampPacer{From: from, To: to, Duration: d}
		// Hits due strictly before t, by the pacer.
		due := func(t time.Duration) int {
			n := 0
			for i := uint64(0); ; i++ {
				at, ok := p.Due(i)
				if !ok || at >= t {
					return n
				}
				n++
			}
		}
		const step = 100 * time.Microsecond
		r0, r1 := from.PerSecond(), to.PerSecond()
		var acc float64
		for el := time.Duration(0); el < d; el += step {
			if el%(50*time.Millisecond) == 0 {
				// Hit i is due when the integral reaches i, so by el the
				// hits 0..floor(acc) are due: ceil(acc) of them, allowing
				// one either way for the integration step.
				want := int(math.Ceil(acc))
				if got := due(el); got < want-1 || got > want+1 {
					t.Fatalf("trial %d (%v→%v over %v): %d hits due by %v, brute force %d", trial, from, to, d, got, el, want)
				}
			}
			mid := (el + step/2).Seconds()
			acc += (r0 + (r1-r0)*mid/d.Seconds()) * step.Seconds()
		}
	}
}
