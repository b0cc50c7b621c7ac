package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/textfmt"
)

type keysRepairTTLOptions struct {
	f       *Factory
	Match   string
	TTL     time.Duration
	DryRun  bool
	Yes     bool
	Force   bool
	MaxRate float64
	Schemas schemaFlags
}

func newCmdKeysRepairTTL(f *Factory, runF func(*keysRepairTTLOptions) error) *cobra.Command {
	opts := &keysRepairTTLOptions{f: f}
	cmd := &cobra.Command{
		Use:   "repair-ttl [--schema NAME | --pattern LAYOUT] [--match PATTERN] [--ttl D] [--dry-run] [--yes] [--max-rate N]",
		Short: "Find limiter keys without a TTL and set it, only where it is still missing",
		Long: `Walk the limiter keys with SCAN (never KEYS; every primary on a Cluster), find
the keys without a TTL — a key without one counts forever, so its identity stays
limited, or its window never rolls — and give each the TTL its schema sets
(--ttl overrides; rlctl's own layouts and several others need --limit to know
it). Keys whose right TTL is unknown are counted and left alone.

Only limiter keys are ever changed: a key gets a TTL only if a layout (the
--schema one, your own from --pattern or rlctl.yaml, or else every built-in)
claims its name and type, and its value is what that layout writes (a counter an
integer, a TAT a number, a bucket its numeric fields, a log's entries times). A
key named like a limiter key that holds something else (rl:fw:notlimiter holding
"plain") is another application's: counted and left alone. The TTL is set by a
script that checks all this, and that the key still has no TTL, atomically: a
gateway that opened a new window meanwhile keeps its own TTL, and no value is
ever changed. The run is safe to interrupt and to run again.

--match narrows the SCAN; it never makes a key a limiter's, and neither does
--ttl, which only replaces the TTL rule of the layout that claims a key. Keys
the pattern matches that no layout claims are counted ("N keys matched --match
but no limiter layout claims them: left alone"). A pattern that reaches any
such key, or any key whose value is not a limiter's, is too broad: rlctl checks
before changing anything and refuses it (exit 2, nothing touched) unless
--force, which repairs only the limiter keys among them. To repair keys of your
own layout, describe it: --pattern 'myrl:{id}' (and --type), or rlctl.yaml.

--dry-run lists what it would repair. Otherwise rlctl asks on a terminal (after
a dry pass that shows the count) and refuses off one unless --yes is given.
--max-rate caps the keys scanned per second so production latency is not
disturbed. Each Redis call gets --timeout: a stalled or unreachable Redis ends
the run with exit 3, and keys whose repair got no answer are counted as
"unknown_outcome" (Redis may or may not have set their TTL; run again).

-o json prints {"scanned", "limiter_keys", "missing_ttl", "repaired",
"skipped_fixed_meanwhile", "skipped_unknown_ttl", "skipped_not_limiter",
"unclaimed", "unknown_outcome", "sample", "left_alone_sample", "dry_run"}.
`,
		Example: `  rlctl keys repair-ttl --schema redis-fixed-window --limit 100/1m --dry-run
  rlctl keys repair-ttl --limit 100/1m --yes --max-rate 5000
  rlctl keys repair-ttl --pattern 'myrl:{id}' --ttl 1m --yes
  rlctl keys repair-ttl --match 'rl:fw:*' --limit 100/1m --force --yes
  rlctl keys repair-ttl --schema kong-rate-limiting --yes -o json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := refuseEmpty(cmd, args, ""); err != nil {
				return err
			}
			if opts.TTL < 0 {
				return usageError("--ttl must be positive")
			}
			if opts.Match != "" && opts.TTL > 0 && opts.TTL < time.Millisecond {
				return usageError("--ttl must be at least 1ms")
			}
			if opts.MaxRate < 0 {
				return usageError("--max-rate must not be negative")
			}
			if runF != nil {
				return runF(opts)
			}
			return runKeysRepairTTL(cmd.Context(), opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Match, "match", "", "SCAN pattern narrowing the keys looked at (only limiter keys among them are repaired)")
	fs.DurationVar(&opts.TTL, "ttl", 0, "TTL to set on the limiter keys found (default: the schema's rule)")
	fs.BoolVar(&opts.DryRun, "dry-run", false, "list keys without a TTL, change nothing")
	fs.BoolVarP(&opts.Yes, "yes", "y", false, "repair without asking")
	fs.BoolVar(&opts.Force, "force", false, "go ahead with a --match pattern that also reaches other keys (they are still left alone)")
	fs.Float64Var(&opts.MaxRate, "max-rate", 0, "most keys scanned per second (0: no cap)")
	opts.Schemas.register(fs)
	return cmd
}

func runKeysRepairTTL(ctx context.Context, opts *keysRepairTTLOptions) error {
	f := opts.f
	schemas, err := opts.Schemas.schemas()
	if err != nil {
		return err
	}
	// Refuse before touching Redis when nobody can be asked.
	if !opts.DryRun && !opts.Yes && !f.IO.InTTY {
		_, err := confirm(f, false, "repair TTLs", "")
		return err
	}
	cfg, client, err := connect(ctx, f)
	if err != nil {
		return err
	}
	defer client.Close()
	ro := keyspace.RepairOptions{Schemas: schemas, Match: opts.Match, TTL: opts.TTL, MaxRate: opts.MaxRate}
	// Keys the ACL user may not read or change are left alone and end the
	// command with exit 3, once what it may do is done.
	var denied *keyspace.PermissionError

	// A dry pass comes first when someone must be asked, or when a --match
	// pattern must be shown to reach only limiter keys before anything
	// changes.
	guard := opts.Match != "" && !opts.Force
	if !opts.DryRun && (!opts.Yes || guard) {
		ro.DryRun = true
		st, err := repairWithProgress(ctx, f, client, ro)
		if err != nil && !errors.As(err, &denied) {
			printRepairSummary(f, st, f.IO.ErrOut)
			return cfg.OpError(ctx, "find keys without TTL", err)
		}
		if other := st.Unclaimed + st.NotFitting; guard && other > 0 {
			printRepairSummary(f, st, f.IO.ErrOut)
			return usageError("--match %q reaches %s that are not limiter keys (listed above): too broad, refusing without --force; nothing changed. "+
				"--force repairs only the limiter keys and still leaves those alone; describe a layout of your own with --pattern or %s", opts.Match, textfmt.Count(other, "key"), configFileName)
		}
		if !opts.Yes {
			printRepairSummary(f, st, f.IO.ErrOut)
			if st.MissingTTL-st.NoRule == 0 {
				if err := writeRepair(f, st); err != nil || denied == nil {
					return err
				}
				return denied
			}
			ok, err := confirm(f, false, "repair TTLs", fmt.Sprintf("Set a TTL on %s (only where still missing)?", textfmt.Count(st.MissingTTL-st.NoRule, "key")))
			if err != nil {
				return err
			}
			if !ok {
				fmt.Fprintln(f.IO.ErrOut, "not confirmed: nothing changed")
				return nil
			}
		}
	}
	ro.DryRun = opts.DryRun
	st, err := repairWithProgress(ctx, f, client, ro)
	if errors.As(err, &denied) {
		if err := writeRepair(f, st); err != nil {
			return err
		}
		return denied
	}
	if err != nil {
		// Whatever was repaired stays repaired; say how far it got.
		printRepairSummary(f, st, f.IO.ErrOut)
		return cfg.OpError(ctx, "repair TTLs", err)
	}
	return writeRepair(f, st)
}

// repairWithProgress runs one pass with a progress bar on a terminal, or a
// status line every few seconds off one.
func repairWithProgress(ctx context.Context, f *Factory, client redis.UniversalClient, ro keyspace.RepairOptions) (keyspace.RepairStats, error) {
	total, err := keyspace.CountKeys(ctx, client)
	if err != nil {
		return keyspace.RepairStats{DryRun: ro.DryRun}, err
	}
	verb := "repair-ttl"
	if ro.DryRun {
		verb = "repair-ttl (dry run)"
	}
	if f.ShowProgress() {
		// The Factory decided this is a terminal; tell mpb, which cannot see
		// through a wrapped writer.
		p := mpb.NewWithContext(ctx, mpb.WithOutput(f.IO.ErrOut), mpb.WithWidth(40), mpb.WithAutoRefresh())
		bar := p.AddBar(total,
			mpb.PrependDecorators(decor.Name(verb+" "), decor.CountersNoUnit("%d / %d keys")),
			mpb.AppendDecorators(decor.Percentage()))
		ro.Progress = func(s keyspace.RepairStats) { bar.SetCurrent(s.Scanned) }
		st, err := keyspace.RepairTTL(ctx, client, ro)
		bar.SetTotal(-1, true)
		p.Wait()
		return st, err
	}
	if f.NoProgress || f.JSON() {
		return keyspace.RepairTTL(ctx, client, ro)
	}
	var mu sync.Mutex
	last := time.Now()
	ro.Progress = func(s keyspace.RepairStats) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) < 5*time.Second {
			return
		}
		last = time.Now()
		fmt.Fprintf(f.IO.ErrOut, "%s: scanned %d of ~%d keys, %d without TTL, %d repaired\n", verb, s.Scanned, total, s.MissingTTL, s.Repaired)
	}
	return keyspace.RepairTTL(ctx, client, ro)
}

// printRepairSummary says what a pass found and did. The keys without TTL
// the first line counts are each in exactly one of the groups below it:
// those that got (or would get) a TTL, per layout with that TTL, those
// skipped, of unknown outcome, or left alone, and why.
func printRepairSummary(f *Factory, st keyspace.RepairStats, w io.Writer) {
	fmt.Fprintf(w, "scanned %s: %d named like limiter keys, %d of them without TTL", textfmt.Count(st.Scanned, "key"), st.Matched, st.MissingTTL+st.NotFitting)
	if st.DryRun {
		fmt.Fprintf(w, " (dry run: nothing changed)")
	}
	fmt.Fprintln(w)
	layouts := func(known bool) {
		for _, l := range st.Layouts {
			if (l.TTLMillis > 0) != known {
				continue
			}
			ttl := "TTL unknown"
			if known {
				ttl = "TTL " + (time.Duration(l.TTLMillis) * time.Millisecond).String()
			}
			fmt.Fprintf(w, "  %s, %s: %s\n", l.Layout, ttl, textfmt.Count(l.Keys, "key"))
			for _, k := range l.Sample {
				fmt.Fprintf(w, "    %s\n", k)
			}
		}
	}
	switch {
	case !st.DryRun:
		fmt.Fprintf(w, "%d repaired (TTL set where still missing)\n", st.Repaired)
		layouts(true)
	case st.MissingTTL > st.NoRule:
		fmt.Fprintf(w, "%d would be repaired (TTL set where still missing):\n", st.MissingTTL-st.NoRule)
		layouts(true)
	}
	if st.Skipped > 0 {
		fmt.Fprintf(w, "%s skipped: a TTL was set meanwhile (a gateway was faster)\n", textfmt.Count(st.Skipped, "key"))
	}
	if st.Unknown > 0 {
		fmt.Fprintf(w, "%s: outcome unknown, the repair got no answer (Redis may or may not have set the TTL; run again to finish)\n", textfmt.Count(st.Unknown, "key"))
	}
	if st.NoRule > 0 {
		fmt.Fprintf(w, "%s left alone: the TTL to set is unknown (pass --limit or --ttl):\n", textfmt.Count(st.NoRule, "key"))
		layouts(false)
	}
	if st.NotFitting > 0 {
		fmt.Fprintf(w, "%s left alone: named like limiter keys, but the value is not what the layout writes (another application's)\n", textfmt.Count(st.NotFitting, "key"))
	}
	if st.Unclaimed > 0 {
		fmt.Fprintf(w, "%s matched --match but no limiter layout claims them: left alone\n", textfmt.Count(st.Unclaimed, "key"))
	}
	if len(st.LeftAlone) > 0 {
		fmt.Fprintln(w, "left alone, for example:")
		for _, k := range st.LeftAlone {
			fmt.Fprintf(w, "  %q\n", k)
		}
	}
}

func writeRepair(f *Factory, st keyspace.RepairStats) error {
	if f.JSON() {
		return f.WriteJSON(st)
	}
	printRepairSummary(f, st, f.IO.Out)
	return nil
}
