package measure

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/rlctl/rlctl/internal/ceiling"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/verify"
	"github.com/rlctl/rlctl/internal/workload"
)

// Options are what the caller adds around a plan.
type Options struct {
	// RedisOptions carry the timeout and environment (the Redis is always
	// the embedded one).
	RedisOptions redisconn.Options
	// Status receives a line as each run starts; nil for none.
	Status io.Writer
}

// Result is what a measurement found: the highest ceiling of its runs,
// and the span that figure covers.
type Result struct {
	Algorithm string `json:"algorithm"`
	// Pattern is the traffic of the run that gave the figure.
	Pattern string `json:"pattern"`
	// Skipped says why a pattern did not run, when one did not.
	Skipped string `json:"skipped,omitempty"`
	// Duration is each run's planned length; Window the published window.
	Duration string `json:"duration"`
	Window   string `json:"window"`
	// Span is the time the figure's run covered, from its first request
	// sent to its last answer. FullWindow is set when Span holds at least
	// one whole window: the figure is then the most admitted in any window
	// of the published length. Otherwise it is the most admitted in Span,
	// which is all a run shorter than the window can show.
	Span       string  `json:"span"`
	SpanMs     float64 `json:"span_ms"`
	FullWindow bool    `json:"full_window"`
	// Ceiling and CeilingUpper bound what was admitted (see analysis);
	// Ratio is Ceiling over the published count.
	Ceiling      float64 `json:"ceiling"`
	CeilingUpper float64 `json:"ceiling_upper"`
	Ratio        float64 `json:"ratio"`
	// Theory is the most the theory allows in the span measured: the
	// design's ceiling when FullWindow, ceiling.SpanCeiling otherwise.
	Theory float64 `json:"theory"`
	// OfferedRate is the constant run's load, per second.
	OfferedRate float64 `json:"offered_rate"`
	// Decisions counts the requests of every run.
	Decisions int `json:"decisions"`
}

// Run measures pl: steady overload spread over every gateway, and (when
// planned) a boundary burst; it keeps the run with the higher ceiling —
// the first shows independent counters, the second the boundary doubling.
//
// The embedded Redis slows at high rates, so a decision gets a second, and
// one it still cannot make is refused (on_error: closed): the measurement
// may then read low, never high, as failing open would admit what the
// design itself would not.
func Run(ctx context.Context, pl Plan, o Options) (*Result, error) {
	W := pl.Params.Limit.Window
	res := &Result{Algorithm: pl.Design, Skipped: pl.Skipped, Duration: pl.Duration.String(), Window: W.String(),
		OfferedRate: pl.Rate, Ceiling: -1}
	patterns := []string{workload.PatternConstant}
	if pl.Boundary {
		patterns = append(patterns, workload.PatternBoundary)
	}
	for _, pattern := range patterns {
		sc, err := pl.scenario(pattern)
		if err != nil {
			return nil, err
		}
		if o.Status != nil {
			fmt.Fprintf(o.Status, "measuring %s (%s traffic, %s)...\n", pl.Design, pattern, pl.Duration)
		}
		out, err := verify.Run(ctx, sc, verify.Options{RedisOptions: o.RedisOptions})
		if noShot(out) {
			// Too short a run to find an edge and a fresh window before
			// it: the constant traffic's figure stands, saying so.
			res.Skipped = fmt.Sprintf("boundary traffic skipped: in %s it fired no shot (before each one it finds a window edge and leaves the window before it idle): measure at least %s for one", pl.Duration, 3*W)
			out.History.Close()
			continue
		}
		if err != nil {
			if out != nil && out.History != nil {
				out.History.Close()
			}
			return nil, refused(out, err)
		}
		if out.Interrupted {
			return nil, exitcode.With(fmt.Errorf("measurement interrupted: %w", context.Cause(ctx)), exitcode.Interrupted)
		}
		res.Decisions += out.History.Len()
		m := out.Report.Metrics
		if c := m[metric.Ceiling]; c > res.Ceiling {
			span := spanOf(out.History)
			res.Pattern = pattern
			res.Ceiling, res.CeilingUpper, res.Ratio = c, m[metric.CeilingUpper], m[metric.CeilingRatio]
			res.Span, res.SpanMs = span.Round(time.Millisecond).String(), float64(span)/float64(time.Millisecond)
			res.FullWindow = span >= W
		}
		if err := out.History.Close(); err != nil {
			return nil, err
		}
	}
	res.Ceiling = max(res.Ceiling, 0)
	res.Theory = pl.Theory.Ceiling
	if !res.FullWindow && res.SpanMs > 0 {
		span := time.Duration(res.SpanMs * float64(time.Millisecond))
		t, err := ceiling.SpanCeiling(pl.Design, pl.Params, span)
		if err != nil {
			return nil, err
		}
		res.Theory = t
	}
	return res, nil
}

// refused is the error of a run that was not measured: one refused
// because of the machines it used (a validity check marked again: rlctl
// too busy, a clock stepped) says so first, since the same measurement run
// again may succeed.
func refused(out *verify.Outcome, err error) error {
	switch {
	case out == nil:
	case out.Report.Busy():
		return fmt.Errorf("this machine was too busy for rlctl to measure (run it again when it is quieter): %w", err)
	case out.Report.Again():
		return fmt.Errorf("a stepped clock, not the design, failed the run (run it again): %w", err)
	}
	return err
}

// noShot reports whether out is a boundary run that fired no shot, and
// failed for that alone.
func noShot(out *verify.Outcome) bool {
	if out == nil || out.History == nil || out.Interrupted || out.History.Meta.BoundarySpan <= 0 || len(out.History.Meta.Boundaries) > 0 {
		return false
	}
	for _, c := range out.Report.Validity {
		if !c.Held && c.Name != "straddled" {
			return false
		}
	}
	return true
}

// spanOf is the time from a history's first request sent to its last
// answer received: what its figures can speak for.
func spanOf(h *history.History) time.Duration {
	first, last := time.Duration(math.MaxInt64), time.Duration(math.MinInt64)
	_ = h.Chunks(func(c *history.History) error { // a read error: Score reported it
		for i := range c.Len() {
			if s := c.Sent(i); s != history.NoTime {
				first = min(first, s)
			}
			if r := c.Received(i); r != history.NoTime {
				last = max(last, r)
			}
		}
		return nil
	})
	if last < first {
		return 0
	}
	return last - first
}

// scenario is the plan as a scenario file, so it goes through the same
// decoding and validation as one a user writes.
func (pl Plan) scenario(pattern string) (*scenario.Scenario, error) {
	p := pl.Params
	W := p.Limit.Window
	target := map[string]any{
		"kind": scenario.KindSimulated, "algorithm": pl.Design, "gateways": p.Gateways,
		"redis": scenario.RedisEmbedded, "timeout": "1s", "clock_skew": p.Skew.String(),
		"endpoints": []map[string]any{{"name": "default", "share": 1, "on_error": "closed"}},
	}
	if d, ok := design.Lookup(pl.Design); ok && d.Accepts.Lease && p.Lease > 0 {
		target["lease"] = map[string]any{"size": p.Lease}
	}
	if p.Capacity > 0 {
		target["capacity"] = p.Capacity
	}
	// The offered rate is written per window, rounded up, so a slow limit
	// (3/1m) keeps its fraction of a request per second.
	perWindow := int64(math.Ceil(pl.Rate * W.Seconds()))
	doc := map[string]any{
		"name":   "measure-" + pattern,
		"limit":  p.Limit.String(),
		"target": target,
		"traffic": map[string]any{
			"pattern":      pattern,
			"rate":         rate.Limit{Count: perWindow, Window: W}.String(),
			"duration":     pl.Duration.String(),
			"max_requests": min(2*pl.Decisions+1000, math.MaxInt32),
		},
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return nil, err
	}
	scs, err := scenario.Parse(b, "ceiling --measure")
	if err != nil {
		return nil, exitcode.With(err, exitcode.Usage)
	}
	return scs[0], nil
}
