package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/report"
	"github.com/rlctl/rlctl/internal/rundir"
)

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
Histories longer than a run keeps in memory (soak runs') are read from their
files a chunk at a time and the merge spills to disk, so memory stays bounded.
`
			c.Example = "  rlctl report merge eu/reports/20261129T100000Z-suite us/reports/20261129T100000Z-suite --out merged"
			c.Args = cobra.MinimumNArgs(2)
			c.Flags().StringVar(&opts.Out, "out", "", "directory to write the merged run to (required)")
			_ = c.MarkFlagRequired("out")
		} else {
			c.Use = "render DIR"
			c.Short = "Re-render a saved run's reports from its histories"
			c.Long = "Re-analyse a run directory's saved histories and write its reports again (into --out, default the same directory).\n" +
				"A history longer than a run keeps in memory (a soak run's) is read from its file a chunk at a time, so memory stays bounded whatever its length.\n"
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
	runs := make([]*rundir.SavedRun, 0, len(opts.Dirs))
	for _, d := range opts.Dirs {
		// Long histories are read in place, so rendering and merging take
		// bounded memory.
		rd, err := rundir.OpenRunDir(d)
		if err != nil {
			return usageError("%v", err)
		}
		defer rd.Close()
		runs = append(runs, rd)
	}
	out := &rundir.RunDir{Path: opts.Out}
	var save *rundir.RunDir
	switch {
	case opts.Merge:
		dir, err := rundir.CreateMergeDir(opts.Out, runs)
		if err != nil {
			return usageError("%v", err)
		}
		out, save = dir, dir
	case out.Path == "":
		out.Path = runs[0].Path // the histories are already there
	default:
		if err := rundir.CheckRenderDir(out.Path, runs[0]); err != nil {
			return usageError("%v", err)
		}
	}
	rep, code, err := rundir.Rescore(runs, save, func(msg string) { fmt.Fprintf(opts.f.IO.ErrOut, "rlctl: %s\n", msg) })
	if err != nil {
		if save != nil {
			os.RemoveAll(save.Path) // made by this merge, exclusively
		}
		return usageError("%v", err)
	}
	if err := out.WriteReport(rep, opts.Formats); err != nil {
		return err
	}
	if opts.f.JSON() {
		if err := report.JSON(opts.f.IO.Out, rep); err != nil {
			return err
		}
	} else {
		if err := report.Terminal(opts.f.IO.Out, rep, opts.f.IO.OutTTY); err != nil {
			return err
		}
		fmt.Fprintln(opts.f.IO.ErrOut, reportLine(out.Path, opts.Formats))
	}
	switch code {
	case exitcode.OK:
	case exitcode.Interrupted:
		// The saved run was interrupted, not this command.
		return failed()
	default:
		return &silentError{code: code}
	}
	return nil
}
