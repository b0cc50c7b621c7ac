package thirdgw_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/redistest/thirdgw"
)

// send makes n requests for id and returns the statuses and how many
// denials came without a positive Retry-After.
func send(t *testing.T, g *thirdgw.Gateway, id string, n int) (statuses map[int]int, noRetry int) {
	t.Helper()
	statuses = map[int]int{}
	for range n {
		req, err := http.NewRequest(http.MethodGet, g.URL+"/api", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-API-Key", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		statuses[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests {
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || s <= 0 {
				noRetry++
			}
		}
	}
	return statuses, noRetry
}

// checkLog requires the gateway's log to hold exactly the decisions its
// answers showed.
func checkLog(t *testing.T, g *thirdgw.Gateway, id string, statuses map[int]int) {
	t.Helper()
	logged := map[int]int{}
	for _, d := range g.Log() {
		if d.ID != id {
			continue
		}
		logged[d.Status]++
		if d.Allowed != (d.Status == http.StatusOK) || d.At.Before(d.Began) {
			t.Errorf("log entry %+v", d)
		}
	}
	if fmt.Sprint(logged) != fmt.Sprint(statuses) {
		t.Errorf("%s: log has %v, the answers were %v", id, logged, statuses)
	}
	if got := g.Allowed(id, time.Time{}, time.Now().Add(time.Second)); got != statuses[http.StatusOK] {
		t.Errorf("%s: Allowed says %d, %d answers were 200", id, got, statuses[http.StatusOK])
	}
}

func TestRedisRateThroughSentinel(t *testing.T) {
	sen := redistest.StartSentinel(t, redistest.Start(t))
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: sen.MasterName, SentinelAddrs: []string{sen.Addr}})
	t.Cleanup(func() { c.Close() })
	g := thirdgw.Start(t, thirdgw.Options{Client: c, Library: thirdgw.RedisRate, Limit: 5, Window: time.Hour})
	alice, noRetry := send(t, g, "alice", 8)
	if alice[http.StatusOK] != 5 || alice[http.StatusTooManyRequests] != 3 || noRetry != 0 {
		t.Fatalf("alice: %v, %d denials without Retry-After", alice, noRetry)
	}
	bob, _ := send(t, g, "bob", 2)
	if bob[http.StatusOK] != 2 {
		t.Fatalf("bob: %v", bob)
	}
	checkLog(t, g, "alice", alice)
	checkLog(t, g, "bob", bob)
	// The library's own keys, read back through its layout.
	s, err := keyspace.NewRegistry(keyspace.Params{Limit: rate.Limit{Count: 5, Window: time.Hour}}).Lookup(keyspace.SchemaRedisRate)
	if err != nil {
		t.Fatal(err)
	}
	counts, err := keyspace.ReadCounts(context.Background(), c, s, []string{"alice", "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := counts.Get("alice"); a.Used != 5 {
		t.Errorf("alice's GCRA holds %+v, want 5 used", a)
	}
}

func TestUluleThroughCluster(t *testing.T) {
	cl := redistest.StartCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs})
	t.Cleanup(func() { c.Close() })
	g := thirdgw.Start(t, thirdgw.Options{Client: c, Library: thirdgw.Ulule, Limit: 3, Window: time.Hour})
	for i := range 4 {
		id := "user-" + strconv.Itoa(i) // over the shards
		st, noRetry := send(t, g, id, 5)
		if st[http.StatusOK] != 3 || st[http.StatusTooManyRequests] != 2 || noRetry != 0 {
			t.Fatalf("%s: %v, %d denials without Retry-After", id, st, noRetry)
		}
		checkLog(t, g, id, st)
	}
}

func TestFailurePolicy(t *testing.T) {
	port := redistest.FreePort(t) // nothing listens there
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	for _, open := range []bool{false, true} {
		g := thirdgw.Start(t, thirdgw.Options{Client: c, Library: thirdgw.RedisRate, Limit: 5, Window: time.Second, FailOpen: open})
		st, _ := send(t, g, "alice", 1)
		want := map[bool]int{false: http.StatusServiceUnavailable, true: http.StatusOK}[open]
		if st[want] != 1 {
			t.Errorf("fail-open %v: %v, want %d", open, st, want)
		}
		if l := g.Log(); len(l) != 1 || l[0].Err == "" || l[0].Allowed != open {
			t.Errorf("fail-open %v: log %+v", open, l)
		}
	}
}
