package measure

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/ceiling"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/rate"
)

// Bounds are the most a measurement may ask of this machine.
type Bounds struct {
	// Rate is the most decisions per second the embedded Redis answers
	// without its own stalls showing in the figures.
	Rate float64
	// Duration is the longest one run (one traffic pattern) may take.
	Duration time.Duration
	// Decisions is the most requests all runs together may make.
	Decisions int64
	// Memory is the most memory, in bytes, the runs may need by estimate.
	Memory int64
}

// DefaultBounds suit a laptop or a CI runner with two cores.
var DefaultBounds = Bounds{Rate: 2000, Duration: 10 * time.Minute, Decisions: 1_000_000, Memory: 1 << 30}

// Costs per gateway (its connection pool, limiter and clock) and per
// decision (its history record and the analysis's copies), for the memory
// estimate; generous, so the estimate errs high.
const (
	bytesPerGateway  = 512 << 10
	bytesPerDecision = 4 * history.BytesPerRecord
	bytesBase        = 64 << 20
)

// Plan is one measurement, sized before it runs.
type Plan struct {
	Design string
	Params ceiling.Params
	// Theory is the design's theory for a whole window.
	Theory ceiling.Theory
	// Duration is each run's length.
	Duration time.Duration
	// Rate is the constant run's offered load, per second: about four
	// times the theory's ceiling per window, so every design is overloaded.
	Rate float64
	// Boundary says whether the boundary run (the quota fired just before
	// and just after a window boundary) takes place; Skipped says why not.
	Boundary bool
	Skipped  string
	// Decisions and Memory are the estimates the bounds were checked on.
	Decisions int64
	Memory    int64
}

// DefaultDuration is how long each run lasts unless told: one window plus
// a tenth of it (at least a second), so the constant run covers a whole
// window and the boundary run has room to reach a boundary.
func DefaultDuration(w time.Duration) time.Duration {
	return w + max(w/10, time.Second)
}

// NewPlan sizes the measurement of design under p for runs of duration d
// (0: DefaultDuration), and refuses (exitcode.Usage) what b does not allow,
// saying why and what would fit.
func NewPlan(design string, p ceiling.Params, d time.Duration, b Bounds) (Plan, error) {
	th, err := ceiling.Of(design, p)
	if err != nil {
		return Plan{}, exitcode.With(err, exitcode.Usage)
	}
	L, W := p.Limit.Count, p.Limit.Window
	pl := Plan{Design: design, Params: p, Theory: th, Duration: d}
	if d < 0 {
		return Plan{}, exitcode.Errorf(exitcode.Usage, "measurement duration %s: must not be negative", d)
	}
	if d == 0 {
		pl.Duration = DefaultDuration(W)
		if pl.Duration > b.Duration {
			return Plan{}, exitcode.Errorf(exitcode.Usage,
				"a whole %s window takes %s to measure, more than the %s one run may take: set a run duration of at most %s to measure a shorter span against the theory for that span, or measure the same design over a shorter window",
				W, pl.Duration, b.Duration, b.Duration)
		}
	}
	if pl.Duration > b.Duration {
		return Plan{}, exitcode.Errorf(exitcode.Usage, "measurement duration %s: at most %s per run", pl.Duration, b.Duration)
	}

	var why []string
	perSecond := th.Ceiling / W.Seconds()
	// Offering twice the ceiling per window is the least that can show it.
	if need := 2 * perSecond; need > b.Rate {
		fit := int64(float64(L) * b.Rate / need)
		hint := "fewer gateways"
		if fit >= 1 {
			hint = fmt.Sprintf("a smaller limit over the same window (%s has the same shape)", rate.Limit{Count: fit, Window: W})
		}
		why = append(why, fmt.Sprintf("showing a ceiling of %s per %s needs at least %.0f decisions/s, beyond the %.0f/s the embedded Redis answers here: measure %s",
			strconv.FormatFloat(th.Ceiling, 'f', -1, 64), W, need, b.Rate, hint))
	}
	pl.Rate = min(max(4*perSecond, 10), b.Rate)

	// The boundary run fires L within a twentieth of the window on each
	// side of a boundary.
	if burst := 20 * float64(L) / W.Seconds(); burst > b.Rate {
		pl.Skipped = fmt.Sprintf("boundary traffic skipped: firing %d requests within %s needs %.0f decisions/s, beyond the %.0f/s the embedded Redis answers here",
			L, W/20, burst, b.Rate)
	} else {
		pl.Boundary = true
	}

	windows := int64(math.Ceil(pl.Duration.Seconds() / W.Seconds()))
	pl.Decisions = int64(math.Ceil(pl.Rate * pl.Duration.Seconds()))
	if pl.Boundary {
		pl.Decisions += windows * (2*L + 2)
	}
	if pl.Decisions > b.Decisions {
		why = append(why, fmt.Sprintf("about %d decisions (%.0f/s for %s) are more than the %d a measurement may make: shorten the duration",
			pl.Decisions, pl.Rate, pl.Duration, b.Decisions))
	}
	pl.Memory = bytesBase + int64(p.Gateways)*bytesPerGateway + pl.Decisions*bytesPerDecision
	if pl.Memory > b.Memory {
		why = append(why, fmt.Sprintf("%d gateways and %d decisions need about %s of memory, more than the %s bound: measure fewer gateways",
			p.Gateways, pl.Decisions, mib(pl.Memory), mib(b.Memory)))
	}
	if len(why) > 0 {
		return Plan{}, exitcode.With(errors.New("cannot measure this on this machine: "+strings.Join(why, "; ")), exitcode.Usage)
	}
	return pl, nil
}

func mib(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%d MiB", n>>20)
}
