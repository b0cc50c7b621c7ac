package design

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/rlctl/rlctl/internal/rate"
)

// Params describe a deployment, for a design's theory.
type Params struct {
	Limit    rate.Limit    // the published limit L per W
	Gateways int           // N: things that can enforce it independently
	Lease    int64         // leasing: slice size S (0 = the design default)
	Capacity int64         // token bucket / GCRA burst (0 = L)
	Skew     time.Duration // largest gateway clock offset
	OnError  string        // the failure policy: open | closed | local ("" = unknown)
}

// Validate says what in p makes no sense: a missing limit, fewer than one
// gateway, or a negative lease, capacity or clock skew (zero lease and
// capacity mean the design's default).
func (p Params) Validate() error {
	var errs []error
	if p.Limit.Count <= 0 || p.Limit.Window <= 0 {
		errs = append(errs, fmt.Errorf("limit %s: want a positive count per positive window", p.Limit))
	}
	if p.Gateways < 1 {
		errs = append(errs, fmt.Errorf("gateways %d: want at least 1", p.Gateways))
	}
	if p.Lease < 0 {
		errs = append(errs, fmt.Errorf("lease %d: must not be negative (0 means the default)", p.Lease))
	}
	if p.Capacity < 0 {
		errs = append(errs, fmt.Errorf("capacity %d: must not be negative (0 means the limit count)", p.Capacity))
	}
	if p.Skew < 0 {
		errs = append(errs, fmt.Errorf("clock skew %s: must not be negative", p.Skew))
	}
	return errors.Join(errs...)
}

// Theory is one design's worst case.
type Theory struct {
	Design string `json:"algorithm"`
	// Ceiling is the most one identity can get admitted in any window of
	// length W (sliding, not only aligned windows). Unbounded designs give
	// +Inf with Bounded false.
	Ceiling float64 `json:"ceiling"`
	Bounded bool    `json:"bounded"`
	// Ratio is Ceiling / L.
	Ratio float64 `json:"ratio"`
	// Aligned is the most admitted in one aligned window (what a dashboard
	// that buckets by window would show).
	Aligned float64 `json:"aligned_window"`
	// WorstSpan is the shortest span of time the Ceiling's admissions need:
	// 0 when they can all come at one instant (around a window boundary:
	// the end of one window and the start of the next), up to W when some
	// must wait for a refill. WorstSpanMs is the same in milliseconds, and
	// Worst says in words where they fall.
	WorstSpan   time.Duration `json:"-"`
	WorstSpanMs float64       `json:"worst_span_ms"`
	Worst       string        `json:"worst_burst"`
	Why         string        `json:"why"`
	// The four questions.
	Atomic  string `json:"atomic"`
	Clock   string `json:"clock"`
	OnError string `json:"on_error"`
}

// The shorthands of the theories: L the limit's count, N the gateways, C a
// bucket's capacity.
func (p Params) count() float64    { return float64(p.Limit.Count) }
func (p Params) gateways() float64 { return float64(max(p.Gateways, 1)) }

// capacity is a bucket's burst C: Capacity, or the limit's count L.
func (p Params) capacity() float64 {
	if p.Capacity > 0 {
		return float64(p.Capacity)
	}
	return p.count()
}

// WindowEnvelope is the envelope of a correct window counter of L per W:
// 2L, L at the end of one window and L at the start of the next. It is
// also the most generous correct design's, for a target whose design is
// unknown.
func WindowEnvelope(p Params) float64 { return 2 * p.count() }

// bucketEnvelope is a bucket's: its capacity.
func bucketEnvelope(p Params) float64 { return p.capacity() }

// boundaryBurst says where a window counter's 2L falls: around one
// boundary, in a span as short as the requests take to arrive, with an
// example of a second on each side.
func boundaryBurst(p Params) string {
	L := p.Limit.Count
	return fmt.Sprintf("all at one window boundary: L just before it and L just after, in a span as short as the requests take (%d in the last second of a window and %d in the first second of the next are %d in 2s)", L, L, 2*L)
}

// refillSpan is how long a full bucket of p takes to refill the L−1 whole
// tokens its ceiling counts beyond its capacity: (L−1)/L of W.
func refillSpan(p Params) time.Duration {
	L := p.Limit.Count
	return time.Duration(float64(p.Limit.Window) * float64(L-1) / float64(L)).Round(time.Millisecond)
}

// spanRefill is the whole tokens (or emissions) that arrive within span
// after a full bucket: the window's L−1 scaled down.
func spanRefill(p Params, span time.Duration) float64 {
	return math.Ceil(p.count()*span.Seconds()/p.Limit.Window.Seconds()) - 1
}

// skewRefill is what clocks Skew apart let a bucket refill that nobody
// waited for, each time a gateway ahead follows one behind: 2×skew of
// tokens.
func skewRefill(p Params) float64 {
	if p.Limit.Window <= 0 {
		return 0
	}
	return 2 * p.Skew.Seconds() * p.Limit.PerSecond()
}
