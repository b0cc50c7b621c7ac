package redisconn_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/redistest"
)

// TestOpenSpawnTopologies: spawn-sentinel and spawn-cluster start the
// processes their names promise, in the roles they promise, and Close stops
// every one of them.
func TestOpenSpawnTopologies(t *testing.T) {
	t.Parallel()
	redistest.Binary(t)
	for _, tc := range []struct {
		spec                string
		servers, sentinels  int
		mode                redisconn.Mode
		primaries, replicas int
	}{
		{redisconn.SpecSpawnSentinel, 2, 3, redisconn.ModeSentinel, 1, 1},
		{redisconn.SpecSpawnCluster, 6, 0, redisconn.ModeCluster, 3, 3},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			cfg, stop, err := redisconn.Open(ctx, tc.spec, redisconn.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s started in %v", tc.spec, time.Since(start).Round(time.Millisecond))
			d := cfg.Deployment()
			if d == nil || cfg.Mode() != tc.mode || len(d.Servers) != tc.servers || len(d.Sentinels) != tc.sentinels {
				stop()
				t.Fatalf("deployment %+v, mode %s", d, cfg.Mode())
			}
			pids := d.Pids()
			var primaries, replicas []string
			masterOf := map[string]string{} // replica → its primary's port
			for _, p := range d.Servers {
				c := redis.NewClient(&redis.Options{Addr: p.Addr})
				info, err := c.Info(ctx, "replication").Result()
				c.Close()
				if err != nil {
					t.Fatalf("%s: %v", p.Addr, err)
				}
				switch redisconn.InfoField(info, "role") {
				case "master":
					primaries = append(primaries, p.Addr)
				case "slave":
					replicas = append(replicas, p.Addr)
					if redisconn.InfoField(info, "master_link_status") != "up" {
						t.Errorf("replica %s not in sync", p.Addr)
					}
					masterOf[p.Addr] = redisconn.InfoField(info, "master_port")
				}
			}
			if len(primaries) != tc.primaries || len(replicas) != tc.replicas {
				t.Errorf("primaries %v, replicas %v", primaries, replicas)
			}
			seen := map[string]bool{}
			for _, m := range masterOf {
				if seen[m] {
					t.Errorf("two replicas follow primary port %s: want one per primary", m)
				}
				seen[m] = true
			}
			// Clients connect through the topology: a write through the
			// Config's client lands on a primary.
			c := cfg.NewClient()
			if err := c.Set(ctx, "topology-probe", "1", 0).Err(); err != nil {
				t.Errorf("write through %s: %v", cfg, err)
			}
			c.Close()
			for _, s := range d.Sentinels {
				sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
				addr, err := sc.GetMasterAddrByName(ctx, d.MasterName).Result()
				sc.Close()
				if err != nil || len(addr) != 2 || !strings.HasSuffix(primaries[0], ":"+addr[1]) {
					t.Errorf("sentinel %s names primary %v (%v), want %s", s.Addr, addr, err, primaries[0])
				}
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			for _, pid := range pids {
				if redistest.Alive(pid) {
					t.Errorf("pid %d alive after stop", pid)
				}
			}
		})
	}
}

// TestHoldReplication: once held, a replica misses every later write to its
// primary while clients go on writing to it.
func TestHoldReplication(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := redistest.Spawn(t, redisconn.SpawnOptions{Replicas: 1, Password: "pw"})
	p := redis.NewClient(&redis.Options{Addr: d.Servers[0].Addr, Password: "pw"})
	defer p.Close()
	r := redis.NewClient(&redis.Options{Addr: d.Servers[1].Addr, Password: "pw"})
	defer r.Close()
	if err := p.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "replica gets the write before the hold", func() bool { return r.Get(ctx, "before").Val() == "1" })
	if err := d.HoldReplication(ctx, d.Servers[0].Addr); err != nil {
		t.Fatal(err)
	}
	if err := p.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatalf("a client's write during the hold: %v", err)
	}
	waitFor(t, "replica's link down", func() bool {
		return redisconn.InfoField(r.Info(ctx, "replication").Val(), "master_link_status") == "down"
	})
	time.Sleep(1500 * time.Millisecond) // the replica retries its link every second
	if r.Exists(ctx, "after").Val() != 0 {
		t.Error("the replica got a write made during the hold")
	}
}

// TestInSyncReplica: of a shard's replicas the first whose link to its
// primary is up is chosen, a node that replicates nothing is passed over,
// and a shard whose only replica was cut off is refused once the wait has
// passed, saying what each node reported.
func TestInSyncReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := redistest.Spawn(t, redisconn.SpawnOptions{Replicas: 1, Password: "pw"})
	lone := redistest.Start(t)
	primary, replica := d.Servers[0].Addr, d.Servers[1].Addr
	cfg, err := redisconn.Parse(redisconn.Options{URL: "redis://:pw@" + primary})
	if err != nil {
		t.Fatal(err)
	}
	r := redis.NewClient(&redis.Options{Addr: replica, Password: "pw"})
	defer r.Close()
	waitFor(t, "replica's link up", func() bool {
		return redisconn.InfoField(r.Info(ctx, "replication").Val(), "master_link_status") == "up"
	})
	// The lone server has no password: its INFO answers NOAUTH or role
	// master, and either way it is passed over.
	got, err := cfg.InSyncReplica(ctx, redisconn.Shard{Primary: primary, Replicas: []string{lone.Addr, replica}}, 2*time.Second)
	if err != nil || got != replica {
		t.Fatalf("in-sync replica %q, %v; want %s", got, err, replica)
	}

	if err := d.HoldReplication(ctx, primary); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "replica's link down", func() bool {
		return redisconn.InfoField(r.Info(ctx, "replication").Val(), "master_link_status") == "down"
	})
	began := time.Now()
	got, err = cfg.InSyncReplica(ctx, redisconn.Shard{Primary: primary, Replicas: []string{replica}}, time.Second)
	if err == nil {
		t.Fatalf("a replica cut off from its primary was chosen: %s", got)
	}
	if waited := time.Since(began); waited < time.Second {
		t.Errorf("refused after %s, before the wait of 1s", waited)
	}
	for _, want := range []string{"no replica of " + primary + " was in sync with it within 1s", replica + ": master_link_status down"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
