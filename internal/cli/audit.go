package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/textfmt"
)

type auditOptions struct {
	f               *Factory
	Schemas         schemaFlags
	Published       string
	Gateways        int
	Algorithm       string
	Lease           int64
	RefreshInterval time.Duration
	BigKeyEntries   int64
}

func newCmdAudit(f *Factory, runF func(*auditOptions) error) *cobra.Command {
	opts := &auditOptions{f: f}
	cmd := &cobra.Command{
		Use:   "audit [--limit 100/1m] [--published 100/1m --gateways N --algorithm A]",
		Short: "Audit a deployment's Redis and limiter keys; exit 1 on failures",
		Long: `Make one pass over the deployment's Redis (every primary on a Cluster) and grade
what a rate limiter depends on. Findings are ok, warn or fail; any fail exits 1.

  limiter-keys     limiter keys per schema
  lookalike-keys   keys named like limiter keys, without a TTL or with too
                   long a TTL, whose value is not a limiter's (another
                   application shares the prefix): named, and left out of
                   the other checks so they cannot fail the audit
  no-ttl           keys without TTL (count and a sample): they count forever
  ttl-too-long     TTLs beyond what the schema allows (needs --limit for most)
  ttl-refresh      TTLs pushed out between two samples: the window never rolls
  hot-identities   counters at 90% of a known limit or over (all counted,
                   the fullest listed)
  big-keys         sliding logs with more than --big-key-entries entries
  eviction-policy  allkeys-*/volatile-* can evict limiter keys: silent fail-open
  memory           used memory against maxmemory; out of memory (OOM), every
                   limiter write is refused
  durability       persistence and replication: what a restart or failover does
  shards           limiter keys and load per primary (Cluster)
  crossslot        one identity's keys in different slots (Cluster)
  clock            this machine's clock against Redis TIME
  latency          PING round trip: the on-path cost of every decision
  auth             the default user without a password
  protected-mode   protected mode off
  ceiling          with --published, --gateways and --algorithm: the true
                   ceiling beside the published one (simple theory)
  access           limiter keys the Redis user may not read (NOPERM): left
                   out of every check, and the audit exits 3

Reads are pipelined per SCAN page and only counts and bounded samples are kept,
so memory stays flat on any keyspace. A finding's count is every key it found;
its sample only a few. Each Redis call gets --timeout: a stalled or unreachable
Redis ends the audit with exit 3. Nothing is written.

-o json prints {"failed", "findings": [{"check", "severity", "message", "count",
"sample"}], "scanned", "limiter_keys", "shards", "latency", "ceiling"}.
`,
		Example: `  rlctl audit
  rlctl audit --limit 100/1m -o json
  rlctl audit --redis 'redis+cluster://10.0.0.1:7000' --published 100/1m --gateways 50 --algorithm redis-fixed-window
  rlctl audit --schema kong-rate-limiting --limit 60/1m`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := refuseEmpty(cmd, args, ""); err != nil {
				return err
			}
			if opts.Algorithm != "" && !validAlgorithm(opts.Algorithm) {
				return usageError("--algorithm %q: unknown (known: %s)", opts.Algorithm, strings.Join(design.Names(), ", "))
			}
			if (opts.Published != "") != (opts.Algorithm != "") {
				return usageError("--published and --algorithm go together")
			}
			if opts.Gateways < 0 || opts.Lease < 0 || opts.BigKeyEntries < 0 || opts.RefreshInterval < 0 {
				return usageError("--gateways, --lease, --big-key-entries and --refresh-interval must not be negative")
			}
			if runF != nil {
				return runF(opts)
			}
			return runAudit(cmd.Context(), opts)
		},
	}
	fs := cmd.Flags()
	opts.Schemas.register(fs)
	fs.StringVar(&opts.Published, "published", "", "the deployment's published limit N/DURATION, for the true ceiling (and, without --limit, the limit the keys are checked against)")
	fs.IntVar(&opts.Gateways, "gateways", 1, "number of gateways sharing the limit")
	fs.StringVar(&opts.Algorithm, "algorithm", "", "the deployment's limiter design, for the true ceiling")
	fs.Int64Var(&opts.Lease, "lease", 0, "lease size, for --algorithm leasing")
	fs.DurationVar(&opts.RefreshInterval, "refresh-interval", time.Second, "gap between the two TTL samples that reveal refreshed TTLs")
	fs.Int64Var(&opts.BigKeyEntries, "big-key-entries", 10000, "flag sliding logs with more entries")
	return cmd
}

func runAudit(ctx context.Context, opts *auditOptions) error {
	f := opts.f
	var published rate.Limit
	if opts.Published != "" {
		l, err := rate.Parse(opts.Published)
		if err != nil {
			return usageError("--published: %v", err)
		}
		published = l
	}
	if opts.Schemas.Limit == "" {
		// The published limit is the one the keys count against: the hot
		// identities and TTL checks need it as much as the ceiling does.
		opts.Schemas.Limit = opts.Published
	}
	schemas, err := opts.Schemas.schemas()
	if err != nil {
		return err
	}
	ao := keyspace.AuditOptions{Schemas: schemas, RefreshInterval: opts.RefreshInterval,
		BigKeyEntries: opts.BigKeyEntries, Gateways: opts.Gateways, Algorithm: opts.Algorithm, Lease: opts.Lease,
		LocalNow: f.Now, Published: published}
	cfg, client, err := connect(ctx, f)
	if err != nil {
		return err
	}
	defer client.Close()
	if f.ShowProgress() {
		fmt.Fprintf(f.IO.ErrOut, "auditing %s ...\n", cfg)
	}
	rep, err := keyspace.Audit(ctx, client, ao)
	if err != nil {
		return cfg.OpError(ctx, "audit", err)
	}
	if f.JSON() {
		if err := f.WriteJSON(rep); err != nil {
			return err
		}
	} else if err := printAudit(f, rep); err != nil {
		return err
	}
	if err := rep.Err(); err != nil {
		// Keys the ACL hid were left out: the audit is incomplete, exit 3.
		return err
	}
	if rep.Failed {
		return failed()
	}
	return nil
}

func printAudit(f *Factory, rep *keyspace.AuditReport) error {
	w := tabwriter.NewWriter(f.IO.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "SEVERITY\tCHECK\tFINDING")
	counts := map[keyspace.Severity]int{}
	for _, fd := range rep.Findings {
		counts[fd.Severity]++
		fmt.Fprintf(w, "%s\t%s\t%s\n", fd.Severity, fd.Check, fd.Message)
		for _, s := range fd.Sample {
			fmt.Fprintf(w, "\t\t  %s\n", s)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(f.IO.Out, "\n%d ok, %d warn, %d fail (%s scanned)\n", counts[keyspace.OK], counts[keyspace.Warn], counts[keyspace.Fail], textfmt.Count(rep.Scanned, "key"))
	return err
}
