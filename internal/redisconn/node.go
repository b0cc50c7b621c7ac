package redisconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// NodeClient returns a client of one node of c's deployment at addr
// (host:port), with c's credentials and TLS settings: a data node, or with
// sentinel a Sentinel (which takes the URL's Sentinel credentials). It
// never retries, so a probe sees each failure as it happens.
func (c *Config) NodeClient(addr string, sentinel bool) *redis.Client {
	t := c.target
	o := &redis.Options{Addr: addr, Username: t.Username, Password: t.Password,
		DialTimeout: c.timeout, ReadTimeout: c.timeout, WriteTimeout: c.timeout,
		ContextTimeoutEnabled: true, MaxRetries: -1, DisableIdentity: true, Protocol: 2, Dialer: c.dialer()}
	if sentinel {
		o.Username, o.Password = t.SentinelUsername, t.SentinelPassword
	}
	if c.tls != nil {
		o.TLSConfig = c.tls.Clone()
	}
	return redis.NewClient(o)
}

// Shard is one primary of a deployment and its replicas, by address.
type Shard struct {
	Primary  string
	Replicas []string
	// ID is the primary's Cluster node id ("" outside a Cluster).
	ID string
}

// SentinelShard asks the URL's Sentinels, in turn, for the monitored
// primary and its replicas.
func (c *Config) SentinelShard(ctx context.Context) (Shard, error) {
	var errs []error
	for _, addr := range c.target.Addrs {
		s := c.NodeClient(addr, true)
		sh, err := sentinelShard(ctx, s, c.target.MasterName)
		s.Close()
		if err == nil {
			return sh, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
	}
	return Shard{}, fmt.Errorf("ask the Sentinels for %s: %w", c.target.MasterName, errors.Join(errs...))
}

func sentinelShard(ctx context.Context, s *redis.Client, master string) (Shard, error) {
	m, err := s.Do(ctx, "SENTINEL", "get-master-addr-by-name", master).StringSlice()
	if err != nil {
		return Shard{}, err
	}
	if len(m) != 2 {
		return Shard{}, fmt.Errorf("no address for master %q", master)
	}
	sh := Shard{Primary: net.JoinHostPort(m[0], m[1])}
	reps, err := s.Do(ctx, "SENTINEL", "REPLICAS", master).Slice()
	if err != nil {
		return Shard{}, err
	}
	for _, r := range reps {
		flags := sentinelField(r, "flags")
		if strings.Contains(flags, "s_down") || strings.Contains(flags, "disconnected") {
			continue
		}
		sh.Replicas = append(sh.Replicas, net.JoinHostPort(sentinelField(r, "ip"), sentinelField(r, "port")))
	}
	return sh, nil
}

// SentinelFailover asks the URL's first answering Sentinel to fail over
// now (SENTINEL FAILOVER). Sentinel refuses with NOGOODSLAVE until it has
// a recent INFO from a replica; that is retried until ctx ends.
func (c *Config) SentinelFailover(ctx context.Context) error {
	var err error
	for {
		for _, addr := range c.target.Addrs {
			s := c.NodeClient(addr, true)
			err = s.Do(ctx, "SENTINEL", "FAILOVER", c.target.MasterName).Err()
			s.Close()
			if err == nil {
				return nil
			}
			if strings.Contains(err.Error(), "NOGOODSLAVE") {
				break
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sentinel failover %s: %w (and still so when %w)", c.target.MasterName, err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ClusterShard finds the shard that owns key's slot: its primary and
// replicas, from the CLUSTER NODES of the first node that answers.
func (c *Config) ClusterShard(ctx context.Context, key string) (Shard, error) {
	var errs []error
	for _, addr := range c.target.Addrs {
		n := c.NodeClient(addr, false)
		sh, err := clusterShard(ctx, n, key)
		n.Close()
		if err == nil {
			return sh, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
	}
	return Shard{}, fmt.Errorf("find the shard of %s: %w", key, errors.Join(errs...))
}

func clusterShard(ctx context.Context, n *redis.Client, key string) (Shard, error) {
	slot, err := n.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return Shard{}, err
	}
	nodes, err := n.ClusterNodes(ctx).Result()
	if err != nil {
		return Shard{}, err
	}
	type node struct{ id, addr, flags, master string }
	var all []node
	var sh Shard
	for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		// id addr@bus[,hostname] flags master-id ping pong epoch state slots...
		addr, _, _ := strings.Cut(f[1], "@")
		nd := node{id: f[0], addr: addr, flags: f[2], master: f[3]}
		all = append(all, nd)
		if !strings.Contains(nd.flags, "master") || strings.Contains(nd.flags, "fail") {
			continue
		}
		for _, r := range f[8:] {
			lo, hi, isRange := strings.Cut(r, "-")
			if !isRange {
				hi = lo
			}
			var a, b int64
			if _, err := fmt.Sscan(lo, &a); err != nil {
				continue // an importing or migrating slot: [..]
			}
			if _, err := fmt.Sscan(hi, &b); err != nil {
				continue
			}
			if slot >= a && slot <= b {
				sh.Primary, sh.ID = nd.addr, nd.id
			}
		}
	}
	if sh.ID == "" {
		return Shard{}, fmt.Errorf("no primary serves slot %d", slot)
	}
	for _, nd := range all {
		if nd.master == sh.ID && !strings.Contains(nd.flags, "fail") {
			sh.Replicas = append(sh.Replicas, nd.addr)
		}
	}
	return sh, nil
}

// Server is what a primary says of itself: its address, version and role.
type Server struct {
	Addr    string `json:"addr"`
	Version string `json:"version"`
	Role    string `json:"role"`
}

// Primaries describes every primary client writes to: the one server, the
// primary the Sentinels name, or each Cluster master (sorted by address).
func (c *Config) Primaries(ctx context.Context, client redis.UniversalClient) ([]Server, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if cc, ok := client.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		var servers []Server
		err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			s := describeServer(ctx, m, m.Options().Addr)
			mu.Lock()
			defer mu.Unlock()
			servers = append(servers, s)
			return nil
		})
		if err != nil {
			return nil, c.ConnError(ctx, "list cluster masters", err)
		}
		slices.SortFunc(servers, func(a, b Server) int { return strings.Compare(a.Addr, b.Addr) })
		return servers, nil
	}
	addr := c.String()
	switch {
	case c.Mode() == ModeSentinel:
		sh, err := c.SentinelShard(ctx)
		if err != nil {
			return nil, c.ConnError(ctx, "find the primary", err)
		}
		addr = sh.Primary
	case !c.IsEmbedded() && len(c.target.Addrs) == 1:
		addr = c.target.Addrs[0]
	}
	s := describeServer(ctx, client, addr)
	if c.IsEmbedded() && s.Version == "unknown" {
		s.Version = "miniredis (embedded)"
	}
	return []Server{s}, nil
}

// describeServer reads a server's version and role from INFO. A server
// that does not answer INFO server (miniredis) has version "unknown".
func describeServer(ctx context.Context, c redis.Cmdable, addr string) Server {
	s := Server{Addr: addr, Version: "unknown", Role: "master"}
	if info, err := c.Info(ctx, "server").Result(); err == nil {
		if v := InfoField(info, "redis_version"); v != "" {
			s.Version = v
		}
	}
	if info, err := c.Info(ctx, "replication").Result(); err == nil {
		if v := InfoField(info, "role"); v != "" {
			s.Role = v
		}
	}
	return s
}

// AckedReplicas is how many of c's primary's replicas, up to n, acknowledge
// a write within timeout: a PUBLISH (replicated, yet no key is written),
// then WAIT on the same connection. A WAIT after no write at all counts a
// replica that has synced but not yet acknowledged (it does within a
// second), whose first real WAITs then time out.
func AckedReplicas(ctx context.Context, c redis.UniversalClient, n int, timeout time.Duration) (int, error) {
	pipe := c.Pipeline()
	pipe.Publish(ctx, "rlctl:replica-probe", "")
	wait := pipe.Do(ctx, "WAIT", n, timeout.Milliseconds())
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, err
	}
	return wait.Int()
}

// SlotOwners says which primary served each Cluster hash slot when it was
// read: ranges of slots, each with its primary's address.
type SlotOwners []SlotRange

// SlotRange is the slots Start..End (inclusive) and the address of the
// primary that served them.
type SlotRange struct {
	Start, End int
	Primary    string
}

// Owner is the address of the primary that served slot, "" when none did.
func (o SlotOwners) Owner(slot int) string {
	for _, r := range o {
		if slot >= r.Start && slot <= r.End {
			return r.Primary
		}
	}
	return ""
}

// ClusterSlotOwners reads which primary serves each slot now (CLUSTER
// SLOTS), from the first of the URL's nodes that answers.
func (c *Config) ClusterSlotOwners(ctx context.Context) (SlotOwners, error) {
	var errs []error
	for _, addr := range c.target.Addrs {
		n := c.NodeClient(addr, false)
		slots, err := n.ClusterSlots(ctx).Result()
		n.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		var out SlotOwners
		for _, s := range slots {
			if len(s.Nodes) > 0 {
				out = append(out, SlotRange{Start: s.Start, End: s.End, Primary: s.Nodes[0].Addr})
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("read the Cluster's slots: %w", errors.Join(errs...))
}

// ReplicaSyncWait is how long a failover waits for a Cluster shard's
// replica to be in sync with its primary (InSyncReplica) before it is
// refused.
const ReplicaSyncWait = 5 * time.Second

// InSyncReplica returns the first of sh's replicas whose link to its
// primary is up and not in a full sync, polling their INFO replication
// (read only) until wait has passed: a Cluster's manual failover on a
// replica that is not waits for it and gives up unseen, so it is refused
// here with what each replica said.
func (c *Config) InSyncReplica(ctx context.Context, sh Shard, wait time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	clients := make([]*redis.Client, len(sh.Replicas))
	for i, a := range sh.Replicas {
		clients[i] = c.NodeClient(a, false)
		defer clients[i].Close()
	}
	said := make([]string, len(sh.Replicas))
	for {
		for i, n := range clients {
			info, err := n.Info(ctx, "replication").Result()
			switch role, link, syncing := InfoField(info, "role"), InfoField(info, "master_link_status"), InfoField(info, "master_sync_in_progress"); {
			case err != nil:
				// The wait ending in the middle of a reading keeps what
				// the replica said before. The reading's socket deadline
				// is the wait's, and on a busy machine it can pass before
				// the context's own timer fires: the clock decides.
				if dl, _ := ctx.Deadline(); said[i] == "" || (ctx.Err() == nil && time.Now().Before(dl)) {
					said[i] = fmt.Sprintf("%s: %v", sh.Replicas[i], err)
				}
			case role != "slave":
				said[i] = fmt.Sprintf("%s: not a replica (role %s)", sh.Replicas[i], role)
			case link == "up" && syncing != "1":
				return sh.Replicas[i], nil
			case syncing == "1":
				said[i] = sh.Replicas[i] + ": a full sync from its primary under way"
			default:
				said[i] = fmt.Sprintf("%s: master_link_status %s", sh.Replicas[i], link)
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no replica of %s was in sync with it within %s (%s)", sh.Primary, wait, strings.Join(said, "; "))
		case <-time.After(50 * time.Millisecond):
		}
	}
}
