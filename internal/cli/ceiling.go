package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/ceiling"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/measure"
	"github.com/rlctl/rlctl/internal/rate"
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

--measure runs the design on the embedded Redis (steady overload through
every gateway, then a burst around a window boundary) and puts the measured
ceiling beside the theory. Each run lasts one window and a tenth (at least a
second more) unless --measure-duration says otherwise; a run shorter than
the window is labelled so and compared with the theory for the span it
covered. What this machine cannot measure (a decision rate the embedded
Redis cannot answer, too many decisions, too much memory, a window too long
to wait for) is refused up front with the reason.
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
				return usageError("--measure-duration must not be negative (0: one window and a tenth), got %s", opts.Duration)
			}
			if opts.Algorithm != "" && !validAlgorithm(opts.Algorithm) {
				return usageError("--algorithm %q: want one of %s", opts.Algorithm, strings.Join(design.Names(), ", "))
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
	fl.BoolVar(&opts.Measure, "measure", false, "also measure it with simulated runs on the embedded Redis")
	fl.DurationVar(&opts.Duration, "measure-duration", 0, fmt.Sprintf("length of each --measure run (default one window and a tenth; at most %s)", measure.DefaultBounds.Duration))
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
	var measured *measure.Result
	if opts.Measure {
		// Planned first, so what cannot be measured here is refused before
		// anything runs.
		plan, err := measure.NewPlan(opts.Algorithm, p, opts.Duration, measure.DefaultBounds)
		if err != nil {
			return fmt.Errorf("--measure: %w", err)
		}
		measured, err = measure.Run(ctx, plan, measure.Options{RedisOptions: opts.f.RedisOptions(""), Status: opts.f.IO.ErrOut})
		if err != nil {
			return err
		}
	}
	out := opts.f.IO.Out
	if opts.f.JSON() {
		doc := struct {
			Published string           `json:"published"`
			Gateways  int              `json:"gateways"`
			Designs   []ceiling.Theory `json:"designs"`
			Measured  *measure.Result  `json:"measured,omitempty"`
		}{opts.Limit.String(), opts.Gateways, theories, measured}
		return opts.f.WriteJSON(doc)
	}
	printCeiling(out, opts, theories, measured)
	return nil
}

func printCeiling(w io.Writer, opts *ceilingOptions, ts []ceiling.Theory, m *measure.Result) {
	fmt.Fprintf(w, "Published: %s per identity, %d gateway(s)\n\n", opts.Limit, opts.Gateways)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ALGORITHM\tALIGNED WINDOW\tANY WINDOW (CEILING)\tRATIO\tCEILING WITHIN")
	for _, t := range ts {
		c := fmt.Sprintf("%g", t.Ceiling)
		if !t.Bounded {
			c = "≥ " + c + " (unbounded)"
		}
		fmt.Fprintf(tw, "%s\t%g\t%s\t%.2f×\t%s\n", t.Design, t.Aligned, c, t.Ratio, worstSpan(t))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nALIGNED WINDOW counts one window from its start to its end, as a dashboard that\n"+
		"buckets by window does; ANY WINDOW is the most in any span of %s, which can\n"+
		"straddle a boundary: where it is higher, the extra comes around a boundary.\n"+
		"CEILING WITHIN is the shortest span that ceiling needs: a burst at a boundary\n"+
		"takes only as long as its requests take to arrive; a bucket's refill takes time.\n", opts.Limit.Window)
	if len(ts) != 1 {
		fmt.Fprintln(w, "\nPick one with --algorithm for the reviewer's four questions.")
		return
	}
	t := ts[0]
	fmt.Fprintf(w, "\nWhy: %s.\n", t.Why)
	fmt.Fprintf(w, "Worst burst (%g, within %s): %s.\n\n", t.Ceiling, worstSpan(t), t.Worst)
	fmt.Fprintf(w, "1. Is every check-and-increment one atomic operation?  %s\n", t.Atomic)
	fmt.Fprintf(w, "2. Whose clock decides the window?                    %s\n", t.Clock)
	fmt.Fprintf(w, "3. What happens when Redis is unreachable?            %s\n", t.OnError)
	least := ""
	if !t.Bounded {
		least = "unbounded: at least "
	}
	fmt.Fprintf(w, "4. What is the actual ceiling?                        %s%g in any window of %s (%.2f× the published %d)\n",
		least, t.Ceiling, opts.Limit.Window, t.Ratio, opts.Limit.Count)
	if m != nil {
		printMeasured(w, opts, t, m)
	}
}

// worstSpan is a theory's CEILING WITHIN cell.
func worstSpan(t ceiling.Theory) string {
	if t.WorstSpan == 0 {
		return "an instant"
	}
	return t.WorstSpan.String()
}

// printMeasured never gives a measured figure without the span it covers.
func printMeasured(w io.Writer, opts *ceilingOptions, t ceiling.Theory, m *measure.Result) {
	L := opts.Limit.Count
	allows := "the theory allows at most"
	if !t.Bounded {
		allows = "the theory has no bound for this design; its least worst case is"
	}
	if m.FullWindow {
		fmt.Fprintf(w, "\nMeasured (%s traffic over %s, at least one whole %s window): ceiling %g (upper bound %g) in any window of %s, %.2f× the published %d; %s %g.\n",
			m.Pattern, m.Span, opts.Limit.Window, m.Ceiling, m.CeilingUpper, opts.Limit.Window, m.Ratio, L, allows, m.Theory)
	} else {
		fmt.Fprintf(w, "\nMeasured over %s only, shorter than the %s window (%s traffic): %g admitted (upper bound %g) in that span, %.2f× the published %d. In a span of %s the theory allows at most %g (%g in a whole window); this is not the ceiling itself: measure at least %s for that.\n",
			m.Span, opts.Limit.Window, m.Pattern, m.Ceiling, m.CeilingUpper, m.Ratio, L, m.Span, m.Theory, t.Ceiling, measure.DefaultDuration(opts.Limit.Window))
	}
	if m.Skipped != "" {
		fmt.Fprintf(w, "Note: %s.\n", m.Skipped)
	}
}
