package redistest

import (
	"context"
	"crypto/tls"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestStartAnswersAndStops(t *testing.T) {
	s := Start(t, "--maxmemory", "10mb")
	ctx := context.Background()
	c := s.Client(t)
	got, err := c.ConfigGet(ctx, "maxmemory").Result()
	if err != nil {
		t.Fatal(err)
	}
	if got["maxmemory"] != "10485760" {
		t.Errorf("maxmemory = %q, want the extra arg applied", got["maxmemory"])
	}
	pids := s.Deployment.Pids()
	s.Stop()
	for _, pid := range pids {
		if Alive(pid) {
			t.Errorf("pid %d still alive after Stop", pid)
		}
	}
}

func TestStartReplicaReplicates(t *testing.T) {
	p := Start(t)
	r := StartReplica(t, p)
	ctx := context.Background()
	if err := p.Client(t).Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	rc := r.Client(t)
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, err := rc.Get(ctx, "k").Result()
		if err == nil && v == "v" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica never saw the key: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStartClusterServesEverySlot(t *testing.T) {
	cl := StartCluster(t)
	if len(cl.Addrs) != 3 {
		t.Fatalf("masters = %d, want 3", len(cl.Addrs))
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs})
	defer c.Close()
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		k := "key-" + itoa(i)
		if err := c.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatalf("set %s: %v", k, err)
		}
	}
	var n atomic.Int32 // ForEachMaster calls back concurrently
	c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		if m.DBSize(ctx).Val() > 0 {
			n.Add(1)
		}
		return nil
	})
	if n.Load() != 3 {
		t.Errorf("keys landed on %d masters, want 3", n.Load())
	}
}

func TestStartSentinelKnowsPrimary(t *testing.T) {
	p := Start(t)
	s := StartSentinel(t, p)
	c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	addr, err := c.GetMasterAddrByName(context.Background(), s.MasterName).Result()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(addr, ":") != p.Addr {
		t.Errorf("sentinel says primary %v, want %s", addr, p.Addr)
	}
}

func TestStartACLNeedsPassword(t *testing.T) {
	s := StartACL(t)
	ctx := context.Background()
	if err := s.Client(t).Ping(ctx).Err(); err != nil {
		t.Fatalf("with the ACL user: %v", err)
	}
	anon := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer anon.Close()
	if err := anon.Set(ctx, "k", "v", 0).Err(); err == nil {
		t.Error("the default user could write; want it disabled")
	}
}

func TestStartTLS(t *testing.T) {
	for _, clientCerts := range []bool{false, true} {
		t.Run(map[bool]string{false: "server-only", true: "client-certs"}[clientCerts], func(t *testing.T) {
			start := map[bool]func(testing.TB) *TLSServer{false: StartTLS, true: StartMutualTLS}[clientCerts]
			s := start(t)
			if !strings.HasPrefix(s.URL(), "rediss://") {
				t.Errorf("URL = %s, want rediss://", s.URL())
			}
			if err := s.Client(t).Ping(context.Background()).Err(); err != nil {
				t.Fatalf("TLS ping: %v", err)
			}
			noCert := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second,
				TLSConfig: &tls.Config{RootCAs: s.Certs.Pool, MinVersion: tls.VersionTLS12}})
			defer noCert.Close()
			if err := noCert.Ping(context.Background()).Err(); (err == nil) == clientCerts {
				t.Errorf("TLS ping without a client certificate: err = %v, want an error only with client authentication", err)
			}
			plain := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second})
			defer plain.Close()
			if err := plain.Ping(context.Background()).Err(); err == nil {
				t.Error("plain-text PING succeeded; want TLS only")
			}
		})
	}
}
