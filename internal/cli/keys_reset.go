package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/textfmt"
)

type keysResetOptions struct {
	f       *Factory
	Arg     string
	Yes     bool
	DryRun  bool
	Schemas schemaFlags
}

func newCmdKeysReset(f *Factory, runF func(*keysResetOptions) error) *cobra.Command {
	opts := &keysResetOptions{f: f}
	cmd := &cobra.Command{
		Use:   "reset ID|KEY [--yes] [--dry-run]",
		Short: "Delete one identity's limiter keys (or one key), giving it a fresh quota",
		Long: `Delete every limiter key of an identity — or, when the argument names an
existing key, that key — so the identity starts with a fresh quota.

Only keys that hold what their layout writes are deleted: a key named like a
limiter key whose type or value is not a limiter's (rl:fw:notlimiter holding
"plain", a hash without a bucket's fields) belongs to another application, and
is listed as left alone. Redis checks this in the same script that deletes, so
nothing can change in between.

The keys are listed first. On a terminal rlctl asks before deleting; off one it
refuses (exit 2, nothing touched) unless --yes is given. --dry-run only lists.
The keys go in one script call (one per hash slot on a Cluster), so the reset is
atomic and touches nothing else. An empty ID is invalid usage (exit 2).

-o json prints {"query", "keys", "deleted", "left_alone", "dry_run"}.
`,
		Example: `  rlctl keys reset alice
  rlctl keys reset alice --dry-run
  rlctl keys reset 'rl:fw:{alice}' --yes
  rlctl keys reset 10.0.0.7 --schema kong-rate-limiting --yes -o json`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := refuseEmpty(cmd, args, "ID or KEY"); err != nil {
				return err
			}
			opts.Arg = args[0]
			if runF != nil {
				return runF(opts)
			}
			return runKeysReset(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "delete without asking")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "list the keys, delete nothing")
	opts.Schemas.register(cmd.Flags())
	return cmd
}

type resetResult struct {
	Query   string   `json:"query"`
	Keys    []string `json:"keys"`
	Deleted int64    `json:"deleted"`
	// LeftAlone are keys named like the identity's limiter keys whose
	// type or value is not a limiter's: never deleted.
	LeftAlone []string `json:"left_alone"`
	// Denied are the identity's keys this Redis user may not read: not
	// reset (exit 3).
	Denied []string `json:"denied_keys,omitempty"`
	DryRun bool     `json:"dry_run"`
}

func runKeysReset(ctx context.Context, opts *keysResetOptions) error {
	f := opts.f
	schemas, err := opts.Schemas.schemas()
	if err != nil {
		return err
	}
	cfg, client, err := connect(ctx, f)
	if err != nil {
		return err
	}
	defer client.Close()
	// The server checks each key's type and value against its layout (the
	// same check the delete repeats atomically): keys named like limiter
	// keys that hold something else are listed as left alone.
	plan, err := keyspace.PlanReset(ctx, client, schemas, opts.Arg)
	var denied *keyspace.PermissionError
	if err != nil && !errors.As(err, &denied) {
		return cfg.OpError(ctx, "find "+opts.Arg+"'s keys", err)
	}
	res := resetResult{Query: opts.Arg, Keys: plan.Keys, LeftAlone: plan.LeftAlone, Denied: plan.Denied, DryRun: opts.DryRun}
	// The keys the ACL lets it read are reset; the others are exit 3.
	finish := func(f *Factory, res resetResult, msg string) error {
		if err := writeReset(f, res, msg); err != nil || denied == nil {
			return err
		}
		return denied
	}
	w := f.IO.ErrOut
	if opts.DryRun && !f.JSON() {
		w = f.IO.Out
	}
	if !f.JSON() || opts.DryRun {
		printLeftAlone(w, res.LeftAlone)
	}
	if len(res.Keys) == 0 {
		return finish(f, res, fmt.Sprintf("no limiter keys for %q: nothing to reset", opts.Arg))
	}
	if !f.JSON() || opts.DryRun {
		fmt.Fprintf(w, "%s of %q:\n", textfmt.Count(len(res.Keys), "key"), opts.Arg)
		for _, k := range res.Keys {
			fmt.Fprintf(w, "  %s\n", k)
		}
	}
	if opts.DryRun {
		return finish(f, res, "dry run: nothing deleted")
	}
	ok, err := confirm(f, opts.Yes, "delete keys", fmt.Sprintf("Delete %s?", textfmt.Count(len(res.Keys), "key")))
	if err != nil {
		return err
	}
	if !ok {
		return finish(f, res, "not confirmed: nothing deleted")
	}
	done, err := plan.Apply(ctx)
	if err != nil {
		return cfg.OpError(ctx, "reset "+opts.Arg, err)
	}
	res.Deleted = int64(len(done.Deleted))
	if len(done.LeftAlone) > 0 {
		// Changed into something else since the check.
		if !f.JSON() {
			printLeftAlone(f.IO.ErrOut, done.LeftAlone)
		}
		res.LeftAlone = append(res.LeftAlone, done.LeftAlone...)
	}
	return finish(f, res, fmt.Sprintf("deleted %s of %q", textfmt.Count(res.Deleted, "key"), opts.Arg))
}

// printLeftAlone names the keys a reset will not delete, and why.
func printLeftAlone(w io.Writer, keys []string) {
	if len(keys) == 0 {
		return
	}
	fmt.Fprintf(w, "%s left alone: named like limiter keys, but the type or value is not what the layout writes (another application's):\n", textfmt.Count(len(keys), "key"))
	for _, k := range keys {
		fmt.Fprintf(w, "  %s\n", k)
	}
}

func writeReset(f *Factory, res resetResult, msg string) error {
	if f.JSON() {
		return f.WriteJSON(res)
	}
	_, err := fmt.Fprintln(f.IO.Out, msg)
	return err
}
