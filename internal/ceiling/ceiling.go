package ceiling

import (
	"fmt"
	"time"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/rate"
)

// Params describe a deployment; a design's theory is a function of them.
type Params = design.Params

// Theory is one design's worst case.
type Theory = design.Theory

// DefaultLease is the lease slice a leasing deployment uses when none is
// given: the leasing design's own default.
func DefaultLease(l rate.Limit) int64 { return design.DefaultLeaseSize(l.Count) }

// Envelope is the token-bucket envelope a correct limiter of the named
// design obeys for one identity, as burst (requests) and refill rate (per
// second), for analysis.Options: what it admits outside counts as
// slipped, what the design should never allow, and not what it allows by
// design (a fixed window's 2L at a boundary, a bucket's capacity plus
// refill). An unknown design ("" for an http target or a user's script)
// gets the most generous correct L-per-W design's: a fixed window's 2L.
func Envelope(name string, p Params) (burst, perSecond float64) {
	burst = design.WindowEnvelope(p)
	if d, ok := design.Lookup(name); ok {
		burst = d.Envelope(p)
	}
	return burst, p.Limit.PerSecond()
}

// Of returns the theory for one design. An unknown design or invalid
// Params (see Validate) is an error.
func Of(name string, p Params) (Theory, error) {
	if err := p.Validate(); err != nil {
		return Theory{}, err
	}
	d, ok := design.Lookup(name)
	if !ok {
		return Theory{}, fmt.Errorf("unknown algorithm %q", name)
	}
	t := d.Theory(p)
	t.Design, t.OnError = name, onError(d, p.OnError)
	t.WorstSpanMs = float64(t.WorstSpan) / float64(time.Millisecond)
	if L := float64(p.Limit.Count); L > 0 {
		t.Ratio = t.Ceiling / L
	}
	return t, nil
}

func onError(d *design.Design, policy string) string {
	if d.State == design.StateLocal {
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

// SpanCeiling is the most one identity can get admitted under the named
// design in any span of time of length span: its Ceiling when span covers a
// whole window, less for designs whose allowance grows with time (token
// buckets, GCRA, the sliding-window counter, the exact log). A measurement
// shorter than the window is compared with this, not with the window's
// ceiling. Where a design admits its worst at one instant (a fixed window's
// boundary), any span can hold it, and the window's figure stands.
func SpanCeiling(name string, p Params, span time.Duration) (float64, error) {
	t, err := Of(name, p)
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
	if d, _ := design.Lookup(name); d.Span != nil {
		return d.Span(p, t, span), nil
	}
	return t.Ceiling, nil
}

// All returns the theory of every design, in DESIGN.md order, for valid
// Params (see Validate).
func All(p Params) []Theory {
	out := make([]Theory, 0, len(design.All()))
	for _, d := range design.All() {
		t, _ := Of(d.Name, p)
		out = append(out, t)
	}
	return out
}
