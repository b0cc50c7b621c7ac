package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/report"
	"github.com/rlctl/rlctl/internal/verify"
)

// A run directory keeps, beside the reports, histories/<scenario>.rlh (the
// raw decision record) and histories/<scenario>.json (what re-scoring needs).
const historiesDir = "histories"

func saveHistory(dir string, out *verify.Outcome) error {
	hd := filepath.Join(dir, historiesDir)
	if err := os.MkdirAll(hd, 0o755); err != nil {
		return fmt.Errorf("save history: %w", err)
	}
	name := sanitizeName(out.Saved.Name)
	if err := out.History.WriteFile(filepath.Join(hd, name+".rlh")); err != nil {
		return fmt.Errorf("save history of %s: %w", out.Saved.Name, err)
	}
	return out.Saved.WriteFile(filepath.Join(hd, name+".json"))
}

// runDir is one saved run: its report.json and, per scenario, the saved
// history and scoring inputs.
type runDir struct {
	path   string
	report report.Report
	saved  map[string]verify.Saved
	hist   map[string]*history.History
}

func readRunDir(path string) (*runDir, error) {
	rd := &runDir{path: path, saved: map[string]verify.Saved{}, hist: map[string]*history.History{}}
	b, err := os.ReadFile(filepath.Join(path, "report.json"))
	if err != nil {
		return nil, usageError("%s is not a run directory: %v", path, err)
	}
	if err := json.Unmarshal(b, &rd.report); err != nil {
		return nil, usageError("%s: report.json: %v", path, err)
	}
	files, _ := filepath.Glob(filepath.Join(path, historiesDir, "*.json"))
	if len(files) == 0 {
		return nil, usageError("%s: no saved histories under %s/", path, historiesDir)
	}
	for _, jf := range files {
		s, err := verify.ReadSaved(jf)
		if err != nil {
			return nil, usageError("%v", err)
		}
		h, err := history.ReadFile(strings.TrimSuffix(jf, ".json") + ".rlh")
		if err != nil {
			return nil, usageError("%s: %v", path, err)
		}
		rd.saved[s.Name] = s
		rd.hist[s.Name] = h
	}
	return rd, nil
}

type reportOptions struct {
	f       *Factory
	Dirs    []string
	Out     string
	Formats []string
	Merge   bool
}

func newCmdReport(f *Factory, runF func(*reportOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Re-render saved runs, or merge runs made on several machines",
	}
	mk := func(merge bool) *cobra.Command {
		opts := &reportOptions{f: f, Merge: merge}
		c := &cobra.Command{
			RunE: func(cmd *cobra.Command, args []string) error {
				opts.Dirs = args
				for _, fm := range opts.Formats {
					if _, ok := report.Formats[fm]; !ok {
						return usageError("--format %q: want json, md, junit or html", fm)
					}
				}
				if runF != nil {
					return runF(opts)
				}
				return runReport(cmd.Context(), opts)
			},
		}
		c.Flags().StringSliceVar(&opts.Formats, "format", report.AllFormats, "report formats: json, md, junit, html")
		if merge {
			c.Use = "merge DIR DIR... --out DIR"
			c.Short = "Merge runs of the same scenarios made on several machines"
			c.Long = `Merge the saved histories of runs made on several machines (one run
directory each) into one run: records are joined exactly, figures and
latency percentiles computed over the whole, thresholds checked again.
`
			c.Example = "  rlctl report merge eu/reports/20261129T100000Z-suite us/reports/20261129T100000Z-suite --out merged"
			c.Args = cobra.MinimumNArgs(2)
			c.Flags().StringVar(&opts.Out, "out", "", "directory to write the merged run to (required)")
			_ = c.MarkFlagRequired("out")
		} else {
			c.Use = "render DIR"
			c.Short = "Re-render a saved run's reports from its histories"
			c.Long = "Re-analyse a run directory's saved histories and write its reports again (into --out, default the same directory).\n"
			c.Example = "  rlctl report render reports/20261129T100000Z-builtin --format html"
			c.Args = cobra.ExactArgs(1)
			c.Flags().StringVar(&opts.Out, "out", "", "directory to write to (default: the run directory)")
		}
		return c
	}
	cmd.AddCommand(mk(false), mk(true))
	return cmd
}

func runReport(ctx context.Context, opts *reportOptions) error {
	runs := make([]*runDir, 0, len(opts.Dirs))
	for _, d := range opts.Dirs {
		rd, err := readRunDir(d)
		if err != nil {
			return err
		}
		runs = append(runs, rd)
	}
	out := opts.Out
	if out == "" {
		out = runs[0].path
	}
	// Scenario order: as in the first run, then any others by name.
	var names []string
	seen := map[string]bool{}
	for _, rd := range runs {
		for _, sc := range rd.report.Scenarios {
			if _, ok := rd.saved[sc.Name]; ok && !seen[sc.Name] {
				seen[sc.Name] = true
				names = append(names, sc.Name)
			}
		}
		var rest []string
		for n := range rd.saved {
			if !seen[n] {
				rest = append(rest, n)
			}
		}
		sort.Strings(rest)
		for _, n := range rest {
			seen[n] = true
			names = append(names, n)
		}
	}
	rep := &report.Report{Started: runs[0].report.Started, Suite: runs[0].report.Suite}
	var dur int64
	for _, rd := range runs {
		dur = max(dur, rd.report.DurationMs)
		if rd.report.Started.Before(rep.Started) {
			rep.Started = rd.report.Started
		}
		if rd.report.Status == report.StatusIncomplete {
			rep.Incomplete = true
		}
	}
	rep.DurationMs = dur
	for _, name := range names {
		var hs []*history.History
		var saved verify.Saved
		extra := map[string]float64{}
		for _, rd := range runs {
			h, ok := rd.hist[name]
			if !ok {
				continue
			}
			hs = append(hs, h)
			saved = rd.saved[name]
			for k, v := range rd.saved[name].Extra {
				extra[k] += v
			}
		}
		if opts.Merge && len(hs) != len(runs) {
			fmt.Fprintf(opts.f.IO.ErrOut, "rlctl: %s is in %d of %d runs; merging what there is\n", name, len(hs), len(runs))
		}
		h := hs[0]
		if len(hs) > 1 {
			m, err := history.Merge(hs...)
			if err != nil {
				return usageError("merge %s: %v", name, err)
			}
			h = m
		}
		if len(extra) > 0 {
			saved.Extra = extra
		}
		sr, err := verify.Score(h, saved)
		if err != nil {
			return usageError("%v", err)
		}
		rep.Scenarios = append(rep.Scenarios, sr)
		if opts.Merge {
			if err := saveHistory(out, &verify.Outcome{History: h, Saved: saved}); err != nil {
				return err
			}
		}
	}
	rep.Finish()
	if err := report.WriteDir(out, rep, opts.Formats); err != nil {
		return err
	}
	if opts.f.JSON() {
		return report.JSON(opts.f.IO.Out, rep)
	}
	if err := report.Terminal(opts.f.IO.Out, rep, opts.f.IO.OutTTY); err != nil {
		return err
	}
	fmt.Fprintf(opts.f.IO.ErrOut, "report: %s\n", out)
	if rep.Status != report.StatusPass {
		return failed()
	}
	return nil
}
