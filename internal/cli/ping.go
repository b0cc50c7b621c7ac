package cli

import (
	"context"
	"fmt"
	"math"
	"net"
	"sort"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
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

// pingNode is one primary as ping reports it.
type pingNode struct {
	Addr    string `json:"addr"`
	Version string `json:"version"`
	Role    string `json:"role"`
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
	URL   string     `json:"url"`
	Mode  string     `json:"mode"`
	Nodes []pingNode `json:"nodes"`
	RTT   pingRTT    `json:"rtt"`
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
	if res.Nodes, err = pingNodes(ctx, cfg, client); err != nil {
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

// pingNodes describes every primary: the one server, the primary a
// Sentinel set names, or each Cluster master.
func pingNodes(ctx context.Context, cfg *redisconn.Config, client redis.UniversalClient) ([]pingNode, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout())
	defer cancel()
	if cc, ok := client.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		var nodes []pingNode
		err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			n := describe(ctx, m, m.Options().Addr)
			mu.Lock()
			defer mu.Unlock()
			nodes = append(nodes, n)
			return nil
		})
		if err != nil {
			return nil, cfg.ConnError(ctx, "list cluster masters", err)
		}
		sort.Slice(nodes, func(i, j int) bool { return nodes[i].Addr < nodes[j].Addr })
		return nodes, nil
	}
	addr := cfg.String()
	t := cfg.Target()
	switch {
	case cfg.Mode() == redisconn.ModeSentinel:
		a, err := sentinelMaster(ctx, cfg)
		if err != nil {
			return nil, err
		}
		addr = a
	case !cfg.IsEmbedded() && len(t.Addrs) == 1:
		addr = t.Addrs[0]
	}
	n := describe(ctx, client, addr)
	if cfg.IsEmbedded() && n.Version == "unknown" {
		n.Version = "miniredis (embedded)"
	}
	return []pingNode{n}, nil
}

// describe reads a server's version and role from INFO. Servers that do
// not answer INFO server (miniredis) are reported as "unknown" rather than
// failing the ping.
func describe(ctx context.Context, c redis.Cmdable, addr string) pingNode {
	n := pingNode{Addr: addr, Version: "unknown", Role: "master"}
	if info, err := c.Info(ctx, "server").Result(); err == nil {
		if v := redisconn.InfoField(info, "redis_version"); v != "" {
			n.Version = v
		}
	}
	if info, err := c.Info(ctx, "replication").Result(); err == nil {
		if v := redisconn.InfoField(info, "role"); v != "" {
			n.Role = v
		}
	}
	return n
}

// sentinelMaster asks the Sentinels, in order, for the current primary.
func sentinelMaster(ctx context.Context, cfg *redisconn.Config) (string, error) {
	t := cfg.Target()
	var lastErr error
	for _, a := range t.Addrs {
		s := redis.NewSentinelClient(&redis.Options{Addr: a, Username: t.SentinelUsername, Password: t.SentinelPassword,
			DialTimeout: cfg.Timeout(), ReadTimeout: cfg.Timeout(), MaxRetries: -1, DisableIdentity: true})
		addr, err := s.GetMasterAddrByName(ctx, t.MasterName).Result()
		s.Close()
		if err == nil && len(addr) == 2 {
			return net.JoinHostPort(addr[0], addr[1]), nil
		}
		if err == nil {
			err = fmt.Errorf("unexpected reply %q", addr)
		}
		lastErr = err
	}
	return "", cfg.ConnError(ctx, "ask sentinels for "+t.MasterName, lastErr)
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
