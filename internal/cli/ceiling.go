package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/ceiling"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/verify"
)

type ceilingOptions struct {
	f         *Factory
	Limit     rate.Limit
	Gateways  int
	Algorithm string
	Lease     int64
	Capacity  int64
	Skew      time.Duration
	OnError   string
	Measure   bool
	Duration  time.Duration
}

func newCmdCeiling(f *Factory, runF func(*ceilingOptions) error) *cobra.Command {
	opts := &ceilingOptions{f: f}
	var limit string
	cmd := &cobra.Command{
		Use:   "ceiling --limit N/DURATION --gateways N [--algorithm A] [--lease N] [--measure]",
		Short: "Show the true ceiling of a deployment, for design reviews",
		Long: `Show, for each limiter design (or the one chosen), the most one identity can
get admitted in any window of the published length, and why: N×L for local
counters, 2L across a fixed-window boundary, L + lease×holders for leasing,
capacity + refill for a token bucket... For the chosen design it also answers
the four questions a reviewer should ask: is every check-and-increment one
atomic operation; whose clock decides the window; what happens when Redis is
unreachable; what is the actual ceiling.

--measure runs a short simulated measurement on the embedded Redis and puts
the measured ceiling beside the theory.
`,
		Example: `  rlctl ceiling --limit 100/1m --gateways 50
  rlctl ceiling --limit 100/1m --gateways 50 --algorithm local-fixed-window
  rlctl ceiling --limit 20/1s --gateways 10 --algorithm leasing --lease 5 --measure`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := rate.Parse(limit)
			if err != nil {
				return usageError("--limit: %v", err)
			}
			opts.Limit = l
			if opts.Gateways < 1 {
				return usageError("--gateways must be at least 1, got %d", opts.Gateways)
			}
			if opts.Lease < 0 {
				return usageError("--lease must not be negative (0: the default slice), got %d", opts.Lease)
			}
			if opts.Capacity < 0 {
				return usageError("--capacity must not be negative (0: the limit count), got %d", opts.Capacity)
			}
			if opts.Skew < 0 {
				return usageError("--clock-skew must not be negative, got %s", opts.Skew)
			}
			if opts.Duration < 0 {
				return usageError("--measure-duration must not be negative (0: the default), got %s", opts.Duration)
			}
			if opts.Algorithm != "" && !validAlgorithm(opts.Algorithm) {
				return usageError("--algorithm %q: want one of %s", opts.Algorithm, strings.Join(limiter.Algorithms, ", "))
			}
			switch opts.OnError {
			case "", "open", "closed", "local":
			default:
				return usageError("--on-error %q: want open, closed or local", opts.OnError)
			}
			if opts.Measure && opts.Algorithm == "" {
				return usageError("--measure needs --algorithm")
			}
			if runF != nil {
				return runF(opts)
			}
			return runCeiling(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&limit, "limit", "", "the published limit, N/DURATION (100/1m)")
	fl.IntVar(&opts.Gateways, "gateways", 1, "how many gateways enforce the limit")
	fl.StringVar(&opts.Algorithm, "algorithm", "", "one design (default: all)")
	fl.Int64Var(&opts.Lease, "lease", 0, "leasing: slice size (default a tenth of the limit)")
	fl.Int64Var(&opts.Capacity, "capacity", 0, "token bucket / GCRA burst (default the limit count)")
	fl.DurationVar(&opts.Skew, "clock-skew", 0, "largest gateway clock offset")
	fl.StringVar(&opts.OnError, "on-error", "", "the failure policy in place: open, closed or local")
	fl.BoolVar(&opts.Measure, "measure", false, "also measure it with a short simulated run (embedded Redis)")
	fl.DurationVar(&opts.Duration, "measure-duration", 0, "length of the --measure run (default 3 windows, at most 10s)")
	_ = cmd.MarkFlagRequired("limit")
	return cmd
}

func runCeiling(ctx context.Context, opts *ceilingOptions) error {
	p := ceiling.Params{Limit: opts.Limit, Gateways: opts.Gateways, Lease: opts.Lease,
		Capacity: opts.Capacity, Skew: opts.Skew, OnError: opts.OnError}
	var theories []ceiling.Theory
	if opts.Algorithm != "" {
		t, err := ceiling.Of(opts.Algorithm, p)
		if err != nil {
			return usageError("%v", err)
		}
		theories = []ceiling.Theory{t}
	} else {
		if err := p.Validate(); err != nil {
			return usageError("%v", err)
		}
		theories = ceiling.All(p)
	}
	var measured *measuredCeiling
	if opts.Measure {
		m, err := measureCeiling(ctx, opts)
		if err != nil {
			return err
		}
		measured = m
	}
	out := opts.f.IO.Out
	if opts.f.JSON() {
		doc := struct {
			Published string           `json:"published"`
			Gateways  int              `json:"gateways"`
			Designs   []ceiling.Theory `json:"designs"`
			Measured  *measuredCeiling `json:"measured,omitempty"`
		}{opts.Limit.String(), opts.Gateways, theories, measured}
		return opts.f.WriteJSON(doc)
	}
	printCeiling(out, opts, theories, measured)
	return nil
}

func printCeiling(w io.Writer, opts *ceilingOptions, ts []ceiling.Theory, m *measuredCeiling) {
	fmt.Fprintf(w, "Published: %s per identity, %d gateway(s)\n\n", opts.Limit, opts.Gateways)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ALGORITHM\tALIGNED WINDOW\tANY WINDOW (CEILING)\tRATIO")
	for _, t := range ts {
		c := fmt.Sprintf("%g", t.Ceiling)
		if !t.Bounded {
			c = "≥ " + c + " (unbounded)"
		}
		fmt.Fprintf(tw, "%s\t%g\t%s\t%.2f×\n", t.Design, t.Aligned, c, t.Ratio)
	}
	tw.Flush()
	if len(ts) != 1 {
		fmt.Fprintln(w, "\nPick one with --algorithm for the reviewer's four questions.")
		return
	}
	t := ts[0]
	fmt.Fprintf(w, "\nWhy: %s.\n\n", t.Why)
	fmt.Fprintf(w, "1. Is every check-and-increment one atomic operation?  %s\n", t.Atomic)
	fmt.Fprintf(w, "2. Whose clock decides the window?                    %s\n", t.Clock)
	fmt.Fprintf(w, "3. What happens when Redis is unreachable?            %s\n", t.OnError)
	fmt.Fprintf(w, "4. What is the actual ceiling?                        %g in any window of %s (%.2f× the published %d)\n",
		t.Ceiling, opts.Limit.Window, t.Ratio, opts.Limit.Count)
	if m != nil {
		fmt.Fprintf(w, "\nMeasured (%s, %s pattern, %s): ceiling %g (upper bound %g), %.2f× the published limit\n",
			m.Algorithm, m.Pattern, m.Duration, m.Ceiling, m.CeilingUpper, m.Ratio)
	}
}

// measuredCeiling is what --measure found.
type measuredCeiling struct {
	Algorithm    string  `json:"algorithm"`
	Pattern      string  `json:"pattern"`
	Duration     string  `json:"duration"`
	Window       string  `json:"window"`
	Ceiling      float64 `json:"ceiling"`
	CeilingUpper float64 `json:"ceiling_upper"`
	Ratio        float64 `json:"ratio"`
}

// measureWindow is the window --measure runs at: ceilings scale with L and
// N, not with W, so a long published window (100/1m) is measured at one
// second to keep the run short.
const measureWindow = time.Second

// measureCeiling runs the design on the embedded Redis twice — steady
// overload spread over every gateway, and a boundary burst — and keeps the
// higher ceiling: the first shows independent counters, the second the
// boundary doubling.
//
// The embedded Redis slows at the higher rates a large L×N asks for, so a
// decision gets a second, and one it still cannot make is refused
// (on_error: closed): the measurement may then read low, never high, as
// failing open would admit what the design itself would not.
func measureCeiling(ctx context.Context, opts *ceilingOptions) (*measuredCeiling, error) {
	d := opts.Duration
	if d <= 0 {
		d = 3 * measureWindow
	}
	d = min(d, 10*time.Second)
	best := &measuredCeiling{Algorithm: opts.Algorithm, Duration: d.String(), Window: measureWindow.String()}
	L := opts.Limit.Count
	for _, pattern := range []string{"constant", "boundary"} {
		doc := fmt.Sprintf(`name: measure-%s
limit: %d/%s
target:
  kind: simulated
  algorithm: %s
  gateways: %d
  redis: embedded
  timeout: 1s
  endpoints:
    - {name: default, share: 1, on_error: closed}
  clock_skew: %s
traffic:
  pattern: %s
  rate: %d/s
  duration: %s
  max_requests: 200000
`, pattern, L, measureWindow, opts.Algorithm, opts.Gateways, opts.Skew, pattern,
			min(max(4*L*int64(opts.Gateways), 50), 2000), d)
		if opts.Algorithm == limiter.Leasing && opts.Lease > 0 {
			doc = strings.Replace(doc, "  clock_skew:", fmt.Sprintf("  lease: {size: %d}\n  clock_skew:", opts.Lease), 1)
		}
		if opts.Capacity > 0 {
			doc = strings.Replace(doc, "  clock_skew:", fmt.Sprintf("  capacity: %d\n  clock_skew:", opts.Capacity), 1)
		}
		scs, err := scenario.Parse([]byte(doc), "ceiling --measure")
		if err != nil {
			return nil, usageError("%v", err)
		}
		fmt.Fprintf(opts.f.IO.ErrOut, "measuring %s (%s traffic, %s)...\n", opts.Algorithm, pattern, d)
		out, err := verify.Run(ctx, scs[0], verify.Options{RedisOptions: opts.f.RedisOptions("")})
		if err != nil {
			return nil, err
		}
		m := out.Report.Metrics
		if m[analysis.Ceiling] >= best.Ceiling {
			best.Pattern = pattern
			best.Ceiling = m[analysis.Ceiling]
			best.CeilingUpper = m[analysis.CeilingUpper]
			best.Ratio = m[analysis.CeilingRatio]
		}
	}
	return best, nil
}
