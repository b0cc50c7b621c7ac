package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/keyspace"
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

The keys are listed first. On a terminal rlctl asks before deleting; off one it
refuses (exit 2, nothing touched) unless --yes is given. --dry-run only lists.
The keys go in one DEL (one per hash slot on a Cluster), so the reset is atomic
and touches nothing else.

-o json prints {"query", "keys", "deleted", "dry_run"}.
`,
		Example: `  rlctl keys reset alice
  rlctl keys reset alice --dry-run
  rlctl keys reset 'rl:fw:{alice}' --yes
  rlctl keys reset 10.0.0.7 --schema kong-rate-limiting --yes -o json`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
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
	DryRun  bool     `json:"dry_run"`
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
	in, err := keyspace.Inspect(ctx, client, schemas, opts.Arg)
	if err != nil {
		return opError(ctx, cfg, "find "+opts.Arg+"'s keys", err)
	}
	res := resetResult{Query: opts.Arg, Keys: []string{}, DryRun: opts.DryRun}
	// Only limiter keys: an argument that names some other key is not
	// deleted, whatever it is.
	for _, k := range in.Keys {
		if k.Schema != "" {
			res.Keys = append(res.Keys, k.Key)
		}
	}
	if len(res.Keys) == 0 {
		return writeReset(f, res, fmt.Sprintf("no limiter keys for %q: nothing to reset", opts.Arg))
	}
	if !f.JSON() || opts.DryRun {
		w := f.IO.ErrOut
		if opts.DryRun && !f.JSON() {
			w = f.IO.Out
		}
		fmt.Fprintf(w, "%d keys of %q:\n", len(res.Keys), opts.Arg)
		for _, k := range res.Keys {
			fmt.Fprintf(w, "  %s\n", k)
		}
	}
	if opts.DryRun {
		return writeReset(f, res, "dry run: nothing deleted")
	}
	ok, err := confirm(f, opts.Yes, "delete keys", fmt.Sprintf("Delete these %d keys?", len(res.Keys)))
	if err != nil {
		return err
	}
	if !ok {
		return writeReset(f, res, "not confirmed: nothing deleted")
	}
	n, err := keyspace.Delete(ctx, client, res.Keys)
	if err != nil {
		return opError(ctx, cfg, "reset "+opts.Arg, err)
	}
	res.Deleted = n
	return writeReset(f, res, fmt.Sprintf("deleted %d keys of %q", n, opts.Arg))
}

func writeReset(f *Factory, res resetResult, msg string) error {
	if f.JSON() {
		return f.WriteJSON(res)
	}
	_, err := fmt.Fprintln(f.IO.Out, msg)
	return err
}
