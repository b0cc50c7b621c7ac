package limiter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// FailoverDetector notices that the Redis a gateway talks to is no longer
// the one it started with, through two observable signs. The marker key
// (<prefix>marker) holds a token written at start: a promoted replica that
// never received it, or an empty server put in the primary's place, lacks
// it; the gateway that first sees it missing writes a new token (SET NX),
// and the other gateways notice the token changed. And the primaries' run
// ids (INFO server; every primary's on a Cluster) change when another
// process answers: a promoted replica that did receive the marker, with
// most counts but not the latest. Either way each gateway's detector fires
// once per failover.
//
// The marker is read in the background, at most every CheckEvery and only
// while requests arrive (Poll starts the read; no goroutine idles between
// requests): a request never waits on the check, so detection lags the
// failover by up to CheckEvery plus one round trip.
type FailoverDetector struct {
	client  redis.UniversalClient
	key     string
	every   time.Duration
	timeout time.Duration

	mu    sync.Mutex
	token string
	// seen holds every set of the primaries' run ids read so far; nil when
	// they could not be read at start, and the marker alone decides.
	seen     map[string]bool
	last     time.Time
	inflight bool
	closed   bool
	wg       sync.WaitGroup

	detectedAt atomic.Int64 // unix ns by the gateway clock, 0 = never
	detections atomic.Int64
	errs       atomic.Int64
}

// NewFailoverDetector returns a detector reading the marker under prefix
// (default "rl:") every `every` (default DefaultCheckEvery), each read
// bounded by timeout (default DefaultTimeout).
func NewFailoverDetector(client redis.UniversalClient, prefix string, every, timeout time.Duration) *FailoverDetector {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if every <= 0 {
		every = DefaultCheckEvery
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &FailoverDetector{client: client, key: prefix + MarkerKey, every: every, timeout: timeout}
}

// Start writes the marker unless another gateway already did, and adopts
// the token it finds.
func (d *FailoverDetector) Start(ctx context.Context) error {
	tok, err := d.mark(ctx)
	if err != nil {
		return fmt.Errorf("write failover marker %s: %w", d.key, err)
	}
	servers := d.serverIDs(ctx)
	d.mu.Lock()
	d.token = tok
	if servers != "" {
		d.seen = map[string]bool{servers: true}
	}
	d.mu.Unlock()
	return nil
}

// serverIDs is the run ids of the primaries the client writes to, sorted
// and joined, or "" when they cannot be read (a server without run_id, as
// the embedded one, or an error: the marker still decides then).
func (d *FailoverDetector) serverIDs(ctx context.Context) string {
	if cc, ok := d.client.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		var ids []string
		err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			id := runID(ctx, c)
			if id == "" {
				return errors.New("no run_id")
			}
			mu.Lock()
			ids = append(ids, id)
			mu.Unlock()
			return nil
		})
		if err != nil {
			return ""
		}
		slices.Sort(ids)
		return strings.Join(ids, ",")
	}
	return runID(ctx, d.client)
}

// runID reads run_id from INFO server, or "".
func runID(ctx context.Context, c redis.Cmdable) string {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return ""
	}
	return runIDOf(info)
}

// runIDOf is run_id in an INFO server reply, or "".
func runIDOf(info string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(line, "run_id:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// mark writes a fresh token if the marker is missing and returns the
// marker's value.
func (d *FailoverDetector) mark(ctx context.Context) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	fresh := hex.EncodeToString(b[:])
	ok, err := d.client.SetNX(ctx, d.key, fresh, 0).Result()
	if err != nil {
		return "", err
	}
	if ok {
		return fresh, nil
	}
	return d.client.Get(ctx, d.key).Result()
}

// Poll starts a background read of the marker if the last one is at least
// CheckEvery old and none is in flight. now is the gateway's clock.
func (d *FailoverDetector) Poll(now time.Time) {
	d.mu.Lock()
	if d.closed || d.inflight || now.Sub(d.last) < d.every {
		d.mu.Unlock()
		return
	}
	d.inflight, d.last = true, now
	d.wg.Add(1)
	d.mu.Unlock()
	go d.check(now)
}

// Check reads the marker now, in the caller's goroutine, and reports
// whether a failover was detected by this read.
func (d *FailoverDetector) Check(ctx context.Context, now time.Time) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	d.mu.Lock()
	known := d.seen != nil
	d.mu.Unlock()
	v, servers, err := d.read(ctx, known)
	switch {
	case errors.Is(err, redis.Nil):
		v, err = d.mark(ctx)
		if err != nil {
			d.errs.Add(1)
			return false, fmt.Errorf("rewrite failover marker %s: %w", d.key, err)
		}
	case err != nil:
		d.errs.Add(1)
		return false, fmt.Errorf("read failover marker %s: %w", d.key, err)
	}
	d.mu.Lock()
	changed := d.token != "" && v != d.token
	d.token = v
	// Only primaries never seen before are a failover: while connections
	// move over, a read may still reach the old ones.
	if servers != "" && !d.seen[servers] {
		changed = true
		d.seen[servers] = true
	}
	d.mu.Unlock()
	if changed {
		d.detectedAt.Store(now.UnixNano())
		d.detections.Add(1)
	}
	return changed, nil
}

// read reads the marker and, when withServers, the primaries' run ids. On
// one server both go in one pipeline, so on one connection: while a
// failover moves the connections over, a marker read from the new server
// and a run id from the old one would make two detections of one failover.
func (d *FailoverDetector) read(ctx context.Context, withServers bool) (marker, servers string, err error) {
	if _, cluster := d.client.(*redis.ClusterClient); cluster || !withServers {
		marker, err = d.client.Get(ctx, d.key).Result()
		if err == nil && withServers {
			servers = d.serverIDs(ctx)
		}
		return marker, servers, err
	}
	pipe := d.client.Pipeline()
	get := pipe.Get(ctx, d.key)
	info := pipe.Info(ctx, "server")
	_, _ = pipe.Exec(ctx) // each command's own error is read below
	if in, err := info.Result(); err == nil {
		servers = runIDOf(in)
	}
	marker, err = get.Result()
	return marker, servers, err
}

func (d *FailoverDetector) check(now time.Time) {
	defer d.wg.Done()
	d.Check(context.Background(), now) //nolint:errcheck // counted in errs; the request path reports Redis errors
	d.mu.Lock()
	d.inflight = false
	d.mu.Unlock()
}

// DetectedAt is when the latest failover was detected (gateway clock), or
// zero.
func (d *FailoverDetector) DetectedAt() time.Time {
	ns := d.detectedAt.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// Detections counts failovers detected.
func (d *FailoverDetector) Detections() int64 { return d.detections.Load() }

// Close stops polling and waits for a read in flight.
func (d *FailoverDetector) Close() error {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.wg.Wait()
	return nil
}
