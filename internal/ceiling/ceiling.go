package ceiling

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/rate"
)

// Params describe a deployment.
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

// DefaultLease is the lease slice a leasing deployment uses when none is
// given: the leasing design's own default.
func DefaultLease(l rate.Limit) int64 { return limiter.DefaultLeaseSize(l.Count) }

// capacity is a bucket's burst C: Capacity, or the limit's count L.
func (p Params) capacity() float64 {
	if p.Capacity > 0 {
		return float64(p.Capacity)
	}
	return float64(p.Limit.Count)
}

// lease is leasing's slice S: Lease, or the design's default.
func (p Params) lease() float64 {
	if p.Lease > 0 {
		return float64(p.Lease)
	}
	return float64(DefaultLease(p.Limit))
}

// Envelope is the token-bucket envelope a correct limiter of design obeys
// for one identity, as burst (requests) and refill rate (per second), for
// analysis.Options: what it admits outside counts as slipped, what the
// design should never allow, and not what it allows by design (a fixed
// window's 2L at a boundary, a bucket's capacity plus refill). An unknown
// design ("" for an http target or a user's script) gets the most
// generous correct L-per-W design's: a fixed window's 2L.
func Envelope(design string, p Params) (burst, perSecond float64) {
	L := float64(p.Limit.Count)
	burst = 2 * L
	switch design {
	case limiter.RedisSlidingLog:
		burst = L
	case limiter.RedisTokenBucket, limiter.LocalTokenBucket, limiter.RedisGCRA:
		burst = p.capacity()
	case limiter.Leasing:
		// Leasing knowingly buys latency with an overage of one slice per
		// holder; only what exceeds that counts as slipped.
		burst = 2*L + p.lease()*float64(max(p.Gateways, 1))
	}
	return burst, p.Limit.PerSecond()
}

// Of returns the theory for one design. An unknown design or invalid
// Params (see Validate) is an error.
func Of(design string, p Params) (Theory, error) {
	if err := p.Validate(); err != nil {
		return Theory{}, err
	}
	L := float64(p.Limit.Count)
	N := float64(max(p.Gateways, 1))
	C := p.capacity()
	skewRefill := 0.0
	if p.Limit.Window > 0 {
		skewRefill = 2 * p.Skew.Seconds() * p.Limit.PerSecond()
	}
	t := Theory{Design: design, Bounded: true, OnError: onError(design, p.OnError)}
	switch design {
	case limiter.LocalFixedWindow:
		t.Aligned, t.Ceiling = N*L, 2*N*L
		t.Why = fmt.Sprintf("each of %d gateways counts alone: %d×L per aligned window, and each can admit L just before and L just after a boundary", int(N), int(N))
		t.Worst = fmt.Sprintf("all at one window boundary: every one of %d gateways admits L just before it and L just after", int(N))
		t.Atomic = "per gateway only: the count is not shared"
		t.Clock = "each gateway's own clock"
	case limiter.LocalTokenBucket:
		t.Aligned = N * (C + L - 1)
		t.Ceiling = t.Aligned
		t.Why = fmt.Sprintf("%d independent buckets, each up to its capacity (%g) plus the L−1 whole tokens it refills within W", int(N), C)
		t.WorstSpan = refillSpan(p)
		t.Worst = fmt.Sprintf("each of %d buckets' capacity %g at once, then the L−1 tokens each refills over the next %s", int(N), C, t.WorstSpan)
		t.Atomic = "per gateway only: the bucket is not shared"
		t.Clock = "each gateway's own clock"
	case limiter.RedisGetIncr:
		t.Aligned = L + N - 1
		t.Ceiling = 2 * t.Aligned
		t.Bounded = false
		t.Why = fmt.Sprintf("GET, compare and INCR are separate round trips: every request in flight between another's read and write passes at L−1; with one request in flight per gateway that is L+%d per window, and more in flight means more", int(N)-1)
		t.Worst = "at one window boundary: L+N−1 just before it and as many just after, more with more requests in flight"
		t.Atomic = "no: GET then INCR leaves a gap between the read and the write"
		t.Clock = "Redis expiry (one clock)"
	case limiter.RedisFixedWindow:
		t.Aligned, t.Ceiling = L, 2*L
		t.Why = "one atomic counter per window: L per aligned window, but L at the end of one window and L at the start of the next are 2L within W"
		t.Worst = boundaryBurst(p)
		t.Atomic = "yes: one Lua script"
		t.Clock = "Redis expiry (one clock)"
	case limiter.RedisFixedWindowRefresh:
		t.Aligned, t.Ceiling = L, L
		t.Why = "the expiry is refreshed on every request, so under continuous traffic the window never rolls: at most L — and a busy caller stays locked out until it is quiet for a whole window"
		t.Worst = "L at once, then nothing while traffic continues"
		t.Atomic = "yes: one Lua script (but the TTL is refreshed on every request)"
		t.Clock = "Redis expiry, pushed forward by every request"
	case limiter.RedisClockWindow:
		t.Aligned, t.Ceiling = L, 2*L
		t.Why = "a key per clock window: L per window, 2L across a boundary"
		t.Worst = boundaryBurst(p)
		t.Atomic = "yes: one Lua script"
		t.Clock = "Redis TIME inside the script (clock: redis) or each gateway's clock (clock: gateway)"
		if p.Skew > 0 {
			t.Ceiling = 3 * L
			t.Why = fmt.Sprintf("gateway clocks up to %s apart put the same instant in different windows: a span of W touches three windows' keys, up to 3L (with clock: redis, 2L)", p.Skew)
			// L of one window just before the slowest clock leaves it,
			// L of the next, and L of the one after from when the fastest
			// clock enters it: 2×skew less than W apart.
			t.WorstSpan = max(p.Limit.Window-2*p.Skew, 0)
			t.Worst = fmt.Sprintf("L of three windows' keys each, from just before the slowest clock leaves the first to just after the fastest enters the third: %s apart", t.WorstSpan)
			t.Clock = "each gateway's own clock (skewed)"
		}
	case limiter.RedisTokenBucket:
		t.Aligned = C + L - 1
		t.Ceiling = t.Aligned
		t.Why = fmt.Sprintf("one shared bucket: capacity %g plus the L−1 whole tokens refilled within W; that is its envelope, not a leak", C)
		t.WorstSpan = refillSpan(p)
		t.Worst = fmt.Sprintf("the capacity %g at once, then the L−1 tokens refilled over the next %s", C, t.WorstSpan)
		if skewRefill > 0 {
			// The script stores each caller's stamp as the last refill,
			// even one behind the stored stamp: a gateway behind sets it
			// back, and the next one ahead refills that time again.
			t.Aligned += skewRefill
			t.Ceiling = t.Aligned
			t.Bounded = false
			t.Why = fmt.Sprintf("one shared bucket, refilled by each gateway's clock: with clocks %s apart, every time a gateway that runs ahead follows one that runs behind, the bucket refills up to %s of tokens (%.1f) that nobody waited for, so the ceiling grows with how often they alternate, up to the offered rate; at least capacity %g plus the L−1 tokens refilled within W plus %.1f", p.Skew, p.Skew, skewRefill/2, C, skewRefill)
		}
		t.Atomic = "yes: one Lua script"
		t.Clock = "the caller's clock (clock: gateway) or Redis TIME (clock: redis); with gateway clocks a request stamped before another but run after it sets the last refill back, and that gap is refilled twice"
	case limiter.RedisSlidingWindow:
		t.Aligned = L
		t.Ceiling = 2*L - 1
		t.Why = "the weighted estimate assumes the previous window's requests were spread evenly; when they bunched at its end, a sliding span of W can hold up to 2L−1"
		t.WorstSpan = slidingSpan(p)
		t.Worst = fmt.Sprintf("L bunched at the end of one window, then L−1 as the blend lets them in over the next %s", t.WorstSpan)
		t.Atomic = "yes: one Lua script"
		t.Clock = "Redis TIME or the caller's clock"
	case limiter.RedisSlidingLog:
		t.Aligned, t.Ceiling = L, L
		t.Why = "an exact log of every admitted request: never more than L in any span of W (memory grows with traffic)"
		t.Worst = "L at once, then none until the first of them is W old"
		t.Atomic = "yes: one Lua script"
		t.Clock = "Redis TIME or the caller's clock"
	case limiter.RedisGCRA:
		t.Aligned = C + L - 1
		t.Ceiling = t.Aligned
		t.Why = fmt.Sprintf("GCRA is a token bucket measured in time: burst %g plus one emission per W/L", C)
		t.WorstSpan = refillSpan(p)
		t.Worst = fmt.Sprintf("the burst %g at once, then L−1 emissions over the next %s", C, t.WorstSpan)
		t.Atomic = "yes: one Lua script"
		t.Clock = "Redis TIME inside the script"
	case limiter.Leasing:
		S := p.lease()
		t.Aligned = L + S*N
		t.Ceiling = 2*L + S*N
		t.Why = fmt.Sprintf("the budget L is handed out in slices of %g; every one of %d holders can still spend a slice it took before the window closed: L + %g×%d per window, and a fixed budget window doubles at its boundary", S, int(N), S, int(N))
		t.Worst = fmt.Sprintf("at the budget window's end: L plus the %d holders' slices spent just before it, as much again just after", int(N))
		t.Atomic = "yes for grants (one Lua script); spending a slice is local"
		t.Clock = "Redis expiry for the budget window; local for spending"
	default:
		return Theory{}, fmt.Errorf("unknown algorithm %q", design)
	}
	if !t.Bounded && design == limiter.RedisTokenBucket {
		// skewed clocks: the extra refills come as gateways alternate
		t.WorstSpan = p.Limit.Window
		t.Worst = "more each time a gateway that runs ahead follows one that runs behind, within W"
	}
	t.WorstSpanMs = float64(t.WorstSpan) / float64(time.Millisecond)
	if L > 0 {
		t.Ratio = t.Ceiling / L
	}
	return t, nil
}

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

// slidingSpan is how far into the next window the sliding-window counter
// lets the L−1 in after L bunched at the end of the previous one: it
// admits while the new count is below L×(elapsed/W), so the (L−1)th gets
// in once (L−2)/L of W has passed.
func slidingSpan(p Params) time.Duration {
	L := p.Limit.Count
	return time.Duration(float64(p.Limit.Window) * float64(max(L-2, 0)) / float64(L)).Round(time.Millisecond)
}

func onError(design, policy string) string {
	switch design {
	case limiter.LocalFixedWindow, limiter.LocalTokenBucket:
		return "not applicable: no Redis on the decision path"
	}
	switch policy {
	case "open":
		return "fail open: every request is admitted while Redis is unreachable (the limit is gone exactly when load is high)"
	case "closed":
		return "fail closed: every request is refused while Redis is unreachable (a Redis blip becomes an outage)"
	case "local":
		return "fall back to a smaller per-gateway allowance"
	}
	return "undecided: whatever the client library does on a timeout — decide it per endpoint (on_error: open | closed | local)"
}

// SpanCeiling is the most one identity can get admitted under design in
// any span of time of length span: the design's Ceiling when span covers a
// whole window, less for designs whose allowance grows with time (token
// buckets, GCRA, the sliding-window counter, the exact log). A measurement
// shorter than the window is compared with this, not with the window's
// ceiling. Where a design admits its worst at one instant (a fixed window's
// boundary), any span can hold it, and the window's figure stands.
func SpanCeiling(design string, p Params, span time.Duration) (float64, error) {
	t, err := Of(design, p)
	if err != nil {
		return 0, err
	}
	if span <= 0 {
		return 0, fmt.Errorf("span %s: must be positive", span)
	}
	W := p.Limit.Window
	if span >= W {
		return t.Ceiling, nil
	}
	L := float64(p.Limit.Count)
	C := p.capacity()
	// Whole tokens (or emissions) that arrive within the span after a full
	// bucket: the window's L−1 scaled down.
	refill := math.Ceil(L*span.Seconds()/W.Seconds()) - 1
	switch design {
	case limiter.LocalTokenBucket:
		return float64(max(p.Gateways, 1)) * (C + refill), nil
	case limiter.RedisTokenBucket:
		return C + refill + 2*p.Skew.Seconds()*p.Limit.PerSecond(), nil
	case limiter.RedisGCRA:
		return C + refill, nil
	case limiter.RedisSlidingWindow:
		// L bunched at the end of the previous window, then the blend lets
		// the new window admit in proportion to its elapsed part.
		return min(t.Ceiling, L+refill+1), nil
	case limiter.RedisClockWindow:
		if span <= t.WorstSpan {
			// skewed clocks' third window is out of reach: a boundary's 2L
			return 2 * L, nil
		}
	}
	return t.Ceiling, nil
}

// All returns the theory of every design, in DESIGN.md order, for valid
// Params (see Validate).
func All(p Params) []Theory {
	out := make([]Theory, 0, len(limiter.Algorithms))
	for _, a := range limiter.Algorithms {
		t, _ := Of(a, p)
		out = append(out, t)
	}
	return out
}
