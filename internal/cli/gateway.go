package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/gateway"
	"github.com/rlctl/rlctl/internal/httpgw"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redisconn"
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
(--identity-header, default X-API-Key) or a query parameter. Answers are 200
or 429 with Retry-After and the RateLimit header fields, plus
X-RateLimit-Decided-By (which path decided) and, when Redis TIME decided,
X-RateLimit-Decided-At (when); /metrics serves Prometheus metrics (see
'rlctl gateway rules').

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
				return usageError("--algorithm %q: want one of %s", opts.Algorithm, strings.Join(limiter.Algorithms, ", "))
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
			if runServe != nil {
				return runServe(opts)
			}
			return runGatewayServe(cmd.Context(), opts)
		},
	}
	fl := serve.Flags()
	fl.StringVar(&opts.Algorithm, "algorithm", limiter.RedisFixedWindow, "limiter design")
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
	fl.StringSliceVar(&opts.Endpoints, "endpoint", []string{"default"}, "endpoint names (served at /NAME)")
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

func runGatewayServe(ctx context.Context, opts *gatewayServeOptions) error {
	f := opts.f
	if opts.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Duration)
		defer cancel()
	}
	var newClient func() redis.UniversalClient // nil: local designs need no Redis
	if !limiter.IsLocal(opts.Algorithm) {
		cfg, stop, err := redisconn.Open(ctx, f.redisURL(redisconn.SpecEmbedded), f.RedisOptions(""))
		if err != nil {
			return err
		}
		defer stop()
		c, err := cfg.Connect(ctx)
		if err != nil {
			return err
		}
		c.Close()
		newClient = cfg.NewClient
	}
	eps := make([]gateway.Endpoint, len(opts.Endpoints))
	for i, n := range opts.Endpoints {
		eps[i] = gateway.Endpoint{Name: n, Share: 1 / float64(len(opts.Endpoints)),
			Policy: limiter.Policy{OnError: opts.OnError, Timeout: f.Timeout, OnFailover: "trust"}}
	}
	set, err := gateway.New(ctx, gateway.Options{
		N: opts.Gateways, Endpoints: eps, NewClient: newClient, ClockSkew: opts.Skew,
		Limiter: limiter.Config{Algorithm: opts.Algorithm, Limit: opts.Limit, Clock: opts.Clock, Prefix: opts.Prefix},
	})
	if err != nil {
		return err
	}
	defer set.Close()
	o := httpgw.Options{Decider: set, Limit: opts.Limit, IdentityHeader: opts.Header, IdentityQuery: opts.Query}
	m := httpgw.NewMetrics(o)

	host, port, _ := net.SplitHostPort(opts.Listen)
	base, _ := strconv.Atoi(port)
	servers := make([]*http.Server, 0, opts.Gateways)
	errc := make(chan error, opts.Gateways)
	for i := 0; i < opts.Gateways; i++ {
		addr := net.JoinHostPort(host, "0")
		if base != 0 {
			addr = net.JoinHostPort(host, strconv.Itoa(base+i))
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			for _, s := range servers {
				s.Close()
			}
			return usageError("gateway %d: %v", i, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", m.Handler())
		mux.Handle("/", httpgw.Handler(o, m, i))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		servers = append(servers, srv)
		fmt.Fprintf(f.IO.Out, "gateway %d: http://%s/\n", i, ln.Addr())
		go func() { errc <- srv.Serve(ln) }()
	}
	fmt.Fprintf(f.IO.ErrOut, "serving %s at %s with %d gateway(s); metrics at /metrics; Ctrl-C stops\n", opts.Algorithm, opts.Limit, opts.Gateways)
	select {
	case <-ctx.Done():
	case err := <-errc:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, s := range servers {
		s.Shutdown(sctx)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil
	}
	return ctx.Err()
}
