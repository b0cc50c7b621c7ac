package limiter

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/redistest"
)

// A replica that did receive the marker, promoted in the primary's place,
// is noticed by its run id: the marker alone would say nothing changed.
func TestDetectorSeesPromotedReplicaWithTheMarker(t *testing.T) {
	t.Parallel()
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	var addr atomic.Value
	addr.Store(primary.Addr)
	c := redis.NewClient(&redis.Options{Addr: primary.Addr, DisableIdentity: true, MaxRetries: -1,
		Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr.Load().(string))
		}})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()

	d := NewFailoverDetector(c, "det:", time.Millisecond, time.Second)
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if changed, err := d.Check(ctx, time.Now()); err != nil || changed {
		t.Fatalf("the same primary read as a failover: %v %v", changed, err)
	}
	if n, err := c.Do(ctx, "WAIT", 1, 2000).Int64(); err != nil || n != 1 {
		t.Fatalf("the marker did not reach the replica: %d %v", n, err)
	}
	rc := replica.Client(t)
	if err := rc.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	addr.Store(replica.Addr)
	primary.Stop()

	deadline := time.Now().Add(5 * time.Second)
	for {
		changed, err := d.Check(ctx, time.Now())
		if err == nil {
			if !changed {
				t.Fatal("the promoted replica, which holds the marker, was not noticed")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the promoted replica never answered: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d.Detections() != 1 {
		t.Fatalf("%d detections, want 1", d.Detections())
	}
	if changed, err := d.Check(ctx, time.Now()); err != nil || changed {
		t.Fatalf("a second read of the same new primary fired again: %v %v", changed, err)
	}
}
