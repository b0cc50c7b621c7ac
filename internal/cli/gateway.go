package cli

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/httpgw"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/target"
	"github.com/rlctl/rlctl/internal/target/simtarget"
)

type gatewayServeOptions struct {
	f         *Factory
	Algorithm string
	Limit     rate.Limit
	Gateways  int
	Listen    string
	Header    string
	Query     string
	OnError   string
	Clock     string
	Skew      time.Duration
	Duration  time.Duration
	Prefix    string
	Endpoints []string
	// MaxIdentity is the longest identity accepted, in bytes.
	MaxIdentity int
	// Drain is how long a stop waits for requests in flight.
	Drain time.Duration
	// Fields is the shape of the rate-limit header fields (draft-11 or
	// draft-06); Policies names each endpoint's draft-11 policy.
	Fields   string
	Policies []string
}

func newCmdGateway(f *Factory, runServe func(*gatewayServeOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Run an HTTP gateway with any limiter design, or print its alerting rules",
	}
	opts := &gatewayServeOptions{f: f}
	var limit string
	serve := &cobra.Command{
		Use:   "serve --algorithm A --limit N/DURATION [--gateways N] [--listen HOST:PORT]",
		Short: "Serve HTTP gateways that rate limit with any design (429 + Retry-After)",
		Long: `Serve N HTTP gateways in one process, each on its own port (the --listen port,
then the next ones), sharing one limiter design through Redis (--redis; the
embedded Redis by default). A request's identity comes from a header
(--identity-header, default X-API-Key) or a query parameter; an identity
longer than --max-identity bytes, empty or holding control characters gets
a 400 and never reaches Redis. Answers are 200
or 429 with Retry-After and the RateLimit header fields of
draft-ietf-httpapi-ratelimit-headers-11 (RateLimit-Policy: "default";q=20;w=1
and RateLimit: "default";r=0;t=1, the policy named after the endpoint, or
as --endpoint NAME=POLICY says); --ratelimit-fields draft-06 sends the
older RateLimit-Limit, -Remaining and -Reset instead. Beside them
go X-RateLimit-Decided-By (which path decided) and, when Redis TIME decided,
X-RateLimit-Decided-At (when); /metrics serves Prometheus metrics (see
'rlctl gateway rules').

SIGINT or SIGTERM stops it: the gateways stop accepting, requests in flight
get up to --drain-timeout to finish, a status line goes to stderr and the
exit status is 0 (130 when the drain timeout cut requests off, or at once on
a second signal).

Point 'rlctl verify' at the printed URLs with an http target to measure it.
`,
		Example: `  rlctl gateway serve --algorithm redis-fixed-window --limit 20/1s --gateways 3 --listen 127.0.0.1:8080
  curl -i -H 'X-API-Key: user-1' http://127.0.0.1:8080/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := rate.Parse(limit)
			if err != nil {
				return usageError("--limit: %v", err)
			}
			opts.Limit = l
			if !validAlgorithm(opts.Algorithm) {
				return usageError("--algorithm %q: want one of %s", opts.Algorithm, strings.Join(design.Names(), ", "))
			}
			if opts.Gateways < 1 || opts.Gateways > 256 {
				return usageError("--gateways must be between 1 and 256")
			}
			if _, _, err := net.SplitHostPort(opts.Listen); err != nil {
				return usageError("--listen %q: %v", opts.Listen, err)
			}
			switch opts.OnError {
			case "open", "closed", "local":
			default:
				return usageError("--on-error %q: want open, closed or local", opts.OnError)
			}
			if opts.MaxIdentity < 1 {
				return usageError("--max-identity must be at least 1 byte, got %d", opts.MaxIdentity)
			}
			if opts.Drain <= 0 {
				return usageError("--drain-timeout must be positive, got %s", opts.Drain)
			}
			if opts.Skew < 0 {
				return usageError("--clock-skew must not be negative, got %s", opts.Skew)
			}
			if opts.Duration < 0 {
				return usageError("--duration must not be negative, got %s", opts.Duration)
			}
			switch opts.Fields {
			case httpgw.FieldsDraft11, httpgw.FieldsDraft06:
			default:
				return usageError("--ratelimit-fields %q: want %s or %s", opts.Fields, httpgw.FieldsDraft11, httpgw.FieldsDraft06)
			}
			opts.Policies = make([]string, len(opts.Endpoints))
			for i, e := range opts.Endpoints {
				name, policy, _ := strings.Cut(e, "=")
				if name == "" {
					return usageError("--endpoint %q: want NAME or NAME=POLICY", e)
				}
				opts.Endpoints[i], opts.Policies[i] = name, policy
				if policy == "" {
					policy = name
				}
				if err := httpgw.CheckPolicyName(policy); err != nil {
					return usageError("--endpoint %q: %v", e, err)
				}
			}
			if runServe != nil {
				return runServe(opts)
			}
			return runGatewayServe(cmd.Context(), opts)
		},
	}
	fl := serve.Flags()
	fl.StringVar(&opts.Algorithm, "algorithm", design.RedisFixedWindow, "limiter design")
	fl.StringVar(&limit, "limit", "", "the limit per identity, N/DURATION")
	fl.IntVar(&opts.Gateways, "gateways", 1, "gateways to serve, one port each")
	fl.StringVar(&opts.Listen, "listen", "127.0.0.1:8080", "address of the first gateway (port 0: any free ports)")
	fl.StringVar(&opts.Header, "identity-header", "X-API-Key", "header carrying the identity")
	fl.StringVar(&opts.Query, "identity-query", "", "query parameter carrying the identity (tried first)")
	fl.StringVar(&opts.OnError, "on-error", "closed", "when Redis fails: open, closed or local")
	fl.StringVar(&opts.Clock, "clock", "", "clock for designs that read one: gateway or redis")
	fl.DurationVar(&opts.Skew, "clock-skew", 0, "largest gateway clock offset")
	fl.DurationVar(&opts.Duration, "duration", 0, "stop after this long (default: until interrupted)")
	fl.StringVar(&opts.Prefix, "prefix", "rl:", "limiter key prefix")
	fl.StringSliceVar(&opts.Endpoints, "endpoint", []string{"default"}, "endpoint names (served at /NAME), each NAME or NAME=POLICY (its draft-11 policy name)")
	fl.StringVar(&opts.Fields, "ratelimit-fields", httpgw.FieldsDraft11, "rate-limit header fields: draft-11, or draft-06 for older clients")
	fl.IntVar(&opts.MaxIdentity, "max-identity", httpgw.DefaultMaxIdentity, "longest identity accepted, in bytes (longer ones get a 400)")
	fl.DurationVar(&opts.Drain, "drain-timeout", 10*time.Second, "on SIGINT/SIGTERM, how long requests in flight get to finish")
	_ = serve.MarkFlagRequired("limit")

	var ro httpgw.RulesOptions
	rules := &cobra.Command{
		Use:     "rules",
		Short:   "Print Prometheus alerting rules for the gateway's metrics",
		Long:    "Print Prometheus alerting rules for the gateway's metrics: fail-open and fail-closed decisions, slow Redis, no decision, denied spikes, stranded lease budget.\n",
		Example: "  rlctl gateway rules > rlctl-rules.yaml",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return httpgw.Rules(f.IO.Out, ro)
		},
	}
	rules.Flags().DurationVar(&ro.SlowP99, "slow-p99", 50*time.Millisecond, "decision p99 that counts as slow")
	rules.Flags().DurationVar(&ro.For, "for", 5*time.Minute, "how long a condition holds before it fires")
	cmd.AddCommand(serve, rules)
	return cmd
}

// gatewayScenario is the simulated target the flags describe: every
// endpoint an equal share of the traffic, under --on-error and the global
// --timeout.
func gatewayScenario(opts *gatewayServeOptions) *scenario.Scenario {
	eps := make([]scenario.Endpoint, len(opts.Endpoints))
	for i, n := range opts.Endpoints {
		eps[i] = scenario.Endpoint{Name: n, Share: 1 / float64(len(opts.Endpoints)),
			OnError: opts.OnError, OnFailover: limiter.OnFailoverTrust}
	}
	return &scenario.Scenario{Limit: opts.Limit, Target: scenario.Target{
		Kind: scenario.KindSimulated, Algorithm: opts.Algorithm, Gateways: opts.Gateways,
		Timeout: opts.f.Timeout, ClockSkew: opts.Skew, Clock: opts.Clock, Prefix: opts.Prefix,
		Endpoints: eps,
	}}
}

func runGatewayServe(ctx context.Context, opts *gatewayServeOptions) error {
	f := opts.f
	stop := ctx // a signal (or --duration) stops serving...
	if opts.Duration > 0 {
		var cancel context.CancelFunc
		stop, cancel = context.WithTimeout(ctx, opts.Duration)
		defer cancel()
	}
	// ...but Redis and the limiters outlive it, so the requests in flight
	// can still be decided while the gateways drain.
	spec := target.SpecOf(gatewayScenario(opts), f.redisURL(redisconn.SpecEmbedded))
	spec.RedisOptions = f.RedisOptions("")
	set, stopGateways, err := simtarget.OpenGateways(ctx, spec)
	if err != nil {
		return err
	}
	defer stopGateways()
	o := httpgw.Options{Decider: set, Limit: opts.Limit, IdentityHeader: opts.Header, IdentityQuery: opts.Query,
		MaxIdentity: opts.MaxIdentity, Fields: opts.Fields, Policies: opts.Policies}
	if err := o.Check(); err != nil {
		return usageError("%v", err)
	}

	host, port, _ := net.SplitHostPort(opts.Listen)
	base, _ := strconv.Atoi(port)
	addrs := make([]string, opts.Gateways)
	for i := range addrs {
		addrs[i] = net.JoinHostPort(host, "0")
		if base != 0 {
			addrs[i] = net.JoinHostPort(host, strconv.Itoa(base+i))
		}
	}
	srv, err := httpgw.Listen(o, httpgw.NewMetrics(o), addrs)
	if err != nil {
		return exitcode.With(err, exitcode.Usage)
	}
	for i, a := range srv.Addrs() {
		fmt.Fprintf(f.IO.Out, "gateway %d: http://%s/\n", i, a)
	}
	fmt.Fprintf(f.IO.ErrOut, "serving %s at %s with %d gateway(s); metrics at /metrics; Ctrl-C stops\n", opts.Algorithm, opts.Limit, opts.Gateways)
	st, err := srv.Serve(stop, opts.Drain)
	if err != nil {
		return err
	}
	if st.Cut > 0 {
		return exitcode.Errorf(exitcode.Interrupted, "gateway stopped: %d request(s) still in flight after the %s drain timeout were cut off (%d finished)",
			st.Cut, opts.Drain, st.Drained)
	}
	if st.Drained == 0 {
		fmt.Fprintln(f.IO.ErrOut, "rlctl: gateway stopped cleanly: no request was in flight")
		return nil
	}
	fmt.Fprintf(f.IO.ErrOut, "rlctl: gateway stopped cleanly: %d request(s) in flight finished in %s\n", st.Drained, st.Took.Round(time.Millisecond))
	return nil
}
