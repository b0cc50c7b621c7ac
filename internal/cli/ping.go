package cli

import (
	"context"
	"fmt"
	"math"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/redisconn"
)

// defaultRedisURL is where rlctl looks when no --redis, RLCTL_REDIS_URL or
// REDIS_URL is given.
const defaultRedisURL = "redis://127.0.0.1:6379"

type pingOptions struct {
	f *Factory
	// Count is how many PINGs to time.
	Count int
}

func newCmdPing(f *Factory, runF func(*pingOptions) error) *cobra.Command {
	opts := &pingOptions{f: f}
	cmd := &cobra.Command{
		Use:   "ping [--count N]",
		Short: "Connect with the global Redis settings; show version, role, mode and round-trip time",
		Long: `Connect to Redis with the global settings (--redis, then RLCTL_REDIS_URL, then
REDIS_URL, else redis://127.0.0.1:6379) and show each primary's server version
and role, the deployment mode (standalone, sentinel, cluster) and the
round-trip time of --count PINGs. The URL is shown with its password redacted.

--redis embedded starts rlctl's in-process Redis, so ping works with nothing
installed; --redis spawn starts a redis-server from PATH for the duration.
`,
		Example: `  rlctl ping
  rlctl ping --redis redis://user:secret@10.0.0.5:6379/0 --count 50
  rlctl ping --redis 'redis+sentinel://10.0.0.1:26379,10.0.0.2:26379/mymaster'
  rlctl ping --redis 'redis+cluster://10.0.0.1:7000,10.0.0.2:7001' -o json
  REDISCLI_AUTH=secret rlctl ping --redis rediss://cache.internal:6380 --tls-ca ca.pem`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Count < 1 || opts.Count > 100000 {
				return usageError("--count %d: want 1 to 100000", opts.Count)
			}
			if runF != nil {
				return runF(opts)
			}
			return runPing(cmd.Context(), opts)
		},
	}
	cmd.Flags().IntVarP(&opts.Count, "count", "c", 10, "number of PINGs to time")
	return cmd
}

// pingRTT summarises the round-trip times, in milliseconds.
type pingRTT struct {
	Count int     `json:"count"`
	Min   float64 `json:"min_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

// pingResult is rlctl ping's output; its JSON form is stable.
type pingResult struct {
	URL   string             `json:"url"`
	Mode  string             `json:"mode"`
	Nodes []redisconn.Server `json:"nodes"`
	RTT   pingRTT            `json:"rtt"`
}

func runPing(ctx context.Context, opts *pingOptions) error {
	f := opts.f
	ro := f.RedisOptions(defaultRedisURL)
	cfg, stop, err := redisconn.Open(ctx, ro.URL, ro)
	if err != nil {
		return err
	}
	defer stop()
	client, err := cfg.Connect(ctx)
	if err != nil {
		return err
	}
	defer client.Close()

	res := pingResult{URL: cfg.String(), Mode: string(cfg.Mode())}
	if res.Nodes, err = cfg.Primaries(ctx, client); err != nil {
		return err
	}
	rtts := make([]time.Duration, 0, opts.Count)
	for i := 0; i < opts.Count; i++ {
		var rtt time.Duration
		err := cfg.Within(ctx, fmt.Sprintf("ping %d of %d", i+1, opts.Count), func(ctx context.Context) error {
			start := time.Now()
			err := client.Ping(ctx).Err()
			rtt = time.Since(start)
			return err
		})
		if err != nil {
			return err
		}
		rtts = append(rtts, rtt)
	}
	res.RTT = summarise(rtts)

	if f.JSON() {
		return f.WriteJSON(res)
	}
	w := tabwriter.NewWriter(f.IO.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "url\t%s\n", res.URL)
	fmt.Fprintf(w, "mode\t%s\n", res.Mode)
	for _, n := range res.Nodes {
		fmt.Fprintf(w, "node\t%s\tversion %s\t%s\n", n.Addr, n.Version, n.Role)
	}
	r := res.RTT
	fmt.Fprintf(w, "rtt\t%d pings\tmin %.3fms  p50 %.3fms  p90 %.3fms  p99 %.3fms  max %.3fms\n",
		r.Count, r.Min, r.P50, r.P90, r.P99, r.Max)
	return w.Flush()
}

// summarise computes nearest-rank percentiles of the round-trip times.
func summarise(rtts []time.Duration) pingRTT {
	s := append([]time.Duration(nil), rtts...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	ms := func(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return pingRTT{Count: len(s), Min: ms(s[0]), P50: ms(rank(0.50)), P90: ms(rank(0.90)),
		P99: ms(rank(0.99)), Max: ms(s[len(s)-1])}
}
