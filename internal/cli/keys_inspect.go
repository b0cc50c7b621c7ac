package cli

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/keyspace"
)

type keysInspectOptions struct {
	f       *Factory
	Arg     string
	Schemas schemaFlags
}

func newCmdKeysInspect(f *Factory, runF func(*keysInspectOptions) error) *cobra.Command {
	opts := &keysInspectOptions{f: f}
	cmd := &cobra.Command{
		Use:   "inspect ID|KEY",
		Short: "Show one identity's limiter keys (or one key), interpreted",
		Long: `Show every limiter key of an identity — or, when the argument names an existing
key, that key — with its type, raw value and TTL, and what it means in the
limiter's terms: "87 of 100 used, window resets in 23s", "12.4 tokens, full in
52s", "next request allowed in 1.2s (GCRA)", "log holds 312 entries (41 KB)".

Most layouts do not store the limit: pass --limit (and --burst for buckets)
to see usage against it. Interpretations use Redis TIME.

Problems are flagged: no TTL (the key counts forever), a TTL longer than the
schema allows, a value out of range. The command exits 1 when any key has a
problem, 0 otherwise (also when the identity has no keys).

-o json prints {"query", "exact_key", "server_time", "keys": [{"key",
"schema", "id", "part", "type", "ttl_ms", "value", "fields", "entries",
"bytes", "meaning", "used", "limit", "tokens", "reset_ms", "retry_after_ms",
"problems"}]}; fields that do not apply are left out.
`,
		Example: `  rlctl keys inspect alice --limit 100/1m
  rlctl keys inspect 'rl:fw:{alice}'
  rlctl keys inspect 203.0.113.9 --schema ulule-limiter --limit 1000/1h -o json
  rlctl keys inspect user42 --pattern 'myrl:{id}' --limit 100 --window 1m`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := refuseEmpty(cmd, args, "ID or KEY"); err != nil {
				return err
			}
			opts.Arg = args[0]
			if runF != nil {
				return runF(opts)
			}
			return runKeysInspect(cmd.Context(), opts)
		},
	}
	opts.Schemas.register(cmd.Flags())
	return cmd
}

func runKeysInspect(ctx context.Context, opts *keysInspectOptions) error {
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
	var denied *keyspace.PermissionError
	if err != nil && !errors.As(err, &denied) {
		return cfg.OpError(ctx, "inspect "+opts.Arg, err)
	}
	problems := 0
	for _, k := range in.Keys {
		problems += len(k.Problems)
	}
	if f.JSON() {
		if err := f.WriteJSON(in); err != nil {
			return err
		}
	} else if err := printInspection(f, in); err != nil {
		return err
	}
	if denied != nil {
		// What the ACL allowed is shown; what it did not is exit 3.
		return denied
	}
	if problems > 0 {
		return failed()
	}
	return nil
}

func printInspection(f *Factory, in *keyspace.Inspection) error {
	out := f.IO.Out
	if len(in.Keys) == 0 {
		if len(in.Denied) > 0 {
			_, err := fmt.Fprintf(out, "no limiter keys for %q that this Redis user may read\n", in.Query)
			return err
		}
		_, err := fmt.Fprintf(out, "no limiter keys for %q: its quota is untouched (or its keys expired)\n", in.Query)
		return err
	}
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "KEY\tSCHEMA\tTYPE\tTTL\tVALUE\tMEANING")
	for _, k := range in.Keys {
		schema := k.Schema
		if schema == "" {
			schema = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", k.Key, schema, k.Type, fmtTTL(k.TTLMillis), rawValue(k), k.Meaning)
		for _, p := range k.Problems {
			fmt.Fprintf(w, "\t\t\t\t\t! %s\n", p)
		}
	}
	return w.Flush()
}

// rawValue prints a key's raw value compactly for the table.
func rawValue(k *keyspace.Key) string {
	switch {
	case k.Value != nil:
		v := *k.Value
		if len(v) > 40 {
			v = v[:37] + "..."
		}
		return v
	case k.Fields != nil:
		s := ""
		for _, name := range sortedKeys(k.Fields) {
			if s != "" {
				s += " "
			}
			s += name + "=" + k.Fields[name]
		}
		return s
	case k.Entries != nil:
		return fmt.Sprintf("%d entries", *k.Entries)
	}
	return "-"
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
