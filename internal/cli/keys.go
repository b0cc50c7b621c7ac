package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redisconn"
)

// configFileName is the config file read from the current directory when
// --config is not given.
const configFileName = "rlctl.yaml"

func newCmdKeys(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys <command>",
		Short: "Inspect, reset and repair a rate limiter's keys in Redis",
		Long: `Operate a rate limiter's state in Redis: read one identity's keys in the
limiter's own terms, reset them, or repair keys that lost their TTL.

rlctl knows its own algorithms' layouts and those of envoyproxy/ratelimit,
go-redis/redis_rate, Spring Cloud Gateway, Kong (redis policy), ulule/limiter,
rate-limit-redis, rate-limiter-flexible, Python limits (Flask-Limiter, slowapi)
and Upstash ratelimit; --pattern (or an rlctl.yaml) adds your own. Without
--schema every layout is tried.

Schemas: ` + strings.Join(keyspace.NewRegistry(keyspace.Params{}).Names(), ", ") + `
`,
		Args: usageArgs(cobra.NoArgs),
	}
	cmd.AddCommand(newCmdKeysInspect(f, nil), newCmdKeysReset(f, nil), newCmdKeysRepairTTL(f, nil))
	return cmd
}

// schemaFlags select and parameterise key schemas; shared by keys and audit.
type schemaFlags struct {
	Schema  string
	Limit   string
	Burst   int64
	Prefix  string
	Pattern string
	Type    string
	Window  time.Duration
	Config  string
}

func (s *schemaFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&s.Schema, "schema", "", "key schema to use (default: try every schema)")
	fs.StringVar(&s.Limit, "limit", "", "published limit N/DURATION (e.g. 100/1m); with --pattern a bare count and --window")
	fs.Int64Var(&s.Burst, "burst", 0, "token bucket / GCRA capacity (default: the limit's count)")
	fs.StringVar(&s.Prefix, "prefix", "", "key prefix of the selected --schema, when not the default")
	fs.StringVar(&s.Pattern, "pattern", "", "your own layout: key pattern with {id} (and optionally {window}), e.g. 'myrl:{id}'")
	fs.StringVar(&s.Type, "type", "string", "value type of --pattern keys: string, hash or zset")
	fs.DurationVar(&s.Window, "window", 0, "window of --pattern keys (and of a bare --limit count)")
	fs.StringVar(&s.Config, "config", "", "config file with schemas (default: ./"+configFileName+" when present)")
}

// params turns the flags into schema parameters.
func (s *schemaFlags) params() (keyspace.Params, error) {
	var p keyspace.Params
	p.Burst, p.Prefix = s.Burst, s.Prefix
	if s.Burst < 0 {
		return p, usageError("--burst must not be negative")
	}
	switch {
	case s.Limit == "":
	case strings.Contains(s.Limit, "/"):
		l, err := rate.Parse(s.Limit)
		if err != nil {
			return p, usageError("--limit: %v", err)
		}
		p.Limit = l
	default:
		n, err := strconv.ParseInt(s.Limit, 10, 64)
		if err != nil || n <= 0 {
			return p, usageError("--limit %q: want N/DURATION (100/1m), or a count with --window", s.Limit)
		}
		if s.Window <= 0 {
			return p, usageError("--limit %d needs --window (or write it as %d/1m)", n, n)
		}
		p.Limit = rate.Limit{Count: n, Window: s.Window}
	}
	return p, nil
}

// schemas returns the schemas to work with: the built-ins, the config
// file's and --pattern's, narrowed to --schema. Any mistake is a usage
// error (exit 2).
func (s *schemaFlags) schemas() ([]*keyspace.Schema, error) {
	p, err := s.params()
	if err != nil {
		return nil, err
	}
	var extra []*keyspace.Schema
	path, explicit := s.Config, s.Config != ""
	if !explicit {
		path = configFileName
	}
	if data, err := os.ReadFile(path); err == nil {
		cs, err := keyspace.ParseConfig(path, data)
		if err != nil {
			return nil, usageError("%v", err)
		}
		extra = append(extra, cs...)
	} else if explicit {
		return nil, usageError("--config: %v", err)
	}
	name := s.Schema
	if s.Pattern != "" {
		spec := keyspace.CustomSpec{Name: "custom", Pattern: s.Pattern, Type: s.Type, Window: s.Window}
		if s.Schema != "" {
			spec.Name = s.Schema
		}
		if !p.Limit.IsZero() {
			spec.Limit, spec.Window = p.Limit.Count, p.Limit.Window
		}
		cs, err := keyspace.CustomSchema(spec)
		if err != nil {
			return nil, usageError("--pattern: %v", err)
		}
		extra = append(extra, cs)
		name = spec.Name
	}
	// A prefix only makes sense for one chosen schema.
	if s.Prefix != "" && name == "" {
		return nil, usageError("--prefix needs --schema")
	}
	reg := keyspace.NewRegistry(p, extra...)
	out, err := reg.Select(name)
	if err != nil {
		return nil, usageError("--schema: %v", err)
	}
	return out, nil
}

// refuseEmpty is invalid usage (exit 2) for an empty or blank argument,
// or a string flag given with an empty or blank value. Such a value is
// most often a shell variable that was never set, and read as "not given"
// it would widen what the command looks at or touches: --match "" as no
// pattern, --schema "" as every schema, an empty identity as a fragment
// of other identities' keys (envoy's key_value chains).
func refuseEmpty(cmd *cobra.Command, args []string, argName string) error {
	for _, a := range args {
		if strings.TrimSpace(a) == "" {
			return usageError("%s must not be empty", argName)
		}
	}
	var err error
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if err == nil && fl.Value.Type() == "string" && strings.TrimSpace(fl.Value.String()) == "" {
			err = usageError("--%s must not be empty (leave the flag out for its default)", fl.Name)
		}
	})
	return err
}

// usageArgs makes an argument-count error invalid usage (exit 2).
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return exitcode.With(err, exitcode.Usage)
		}
		return nil
	}
}

// connect opens the Redis the global flags point at and checks it answers
// (exit 3 when it does not, with the password redacted). Every later call
// gives up after --timeout (redisconn's ConnectBounded).
func connect(ctx context.Context, f *Factory) (*redisconn.Config, redis.UniversalClient, error) {
	cfg, err := redisconn.Parse(f.RedisOptions(defaultRedisURL))
	if err != nil {
		return nil, nil, err
	}
	client, err := cfg.ConnectBounded(ctx)
	if err != nil {
		return nil, nil, err
	}
	return cfg, client, nil
}

// confirm asks a yes/no question on a terminal. Off a terminal it refuses
// (exit 2) unless yes was given, so a script never deletes by accident.
func confirm(f *Factory, yes bool, what, question string) (bool, error) {
	if yes {
		return true, nil
	}
	if !f.IO.InTTY {
		return false, usageError("refusing to %s without --yes when not on a terminal", what)
	}
	fmt.Fprintf(f.IO.ErrOut, "%s [y/N] ", question)
	line, err := bufio.NewReader(f.IO.In).ReadString('\n')
	if err != nil && line == "" {
		return false, nil
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

func fmtTTL(ms int64) string {
	switch {
	case ms == -1:
		return "none"
	case ms < 0:
		return "gone"
	case ms < 10000:
		return strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + "s"
	}
	return (time.Duration(ms) * time.Millisecond).Round(time.Second).String()
}
