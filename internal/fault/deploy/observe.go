package deploy

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/fault"
	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/redisconn"
)

// Defaults of ObserveOptions.
const (
	DefaultObserveEvery = 20 * time.Millisecond
	DefaultObserveLimit = 15 * time.Second
)

// maxSeen bounds Election.Errors; Repeats counts what follows.
const maxSeen = 200

// ObserveOptions say what Observe watches.
type ObserveOptions struct {
	// Key picks the Cluster shard watched: the one serving its slot (a key
	// of the run's first identity). Not used on Sentinel.
	Key string
	// Probe, when set, is a key of the run's own that Observe writes
	// (SET, 60s TTL) through the deployment's own client — Sentinel
	// discovery or Cluster redirects, as the gateways' go-redis clients —
	// at every poll, and deletes at the end: the first such write found on
	// the new primary is when it took writes. On a Cluster it must share
	// Key's slot ("rlctl:probe:{user-0}"). Empty: nothing is written, and
	// Answered is when the new primary answered ROLE as master with the
	// deployment naming it.
	Probe string
	// Every is the poll period (DefaultObserveEvery).
	Every time.Duration
	// Limit bounds the watch (DefaultObserveLimit); an election not over
	// by then shows as such.
	Limit time.Duration
}

// Seen is an error a poll met: on which node, doing what, first when.
type Seen struct {
	At   time.Time `json:"at"`
	Node string    `json:"node"`
	What string    `json:"what"`
	Err  string    `json:"error"`
	// Repeats counts the same error at the next polls of the same node.
	Repeats int `json:"repeats,omitempty"`
}

// Election is what Observe saw of a primary changing hands, on the wall
// clock; a zero time was not seen before the watch ended. Its
// fault.Election is recorded as a simulated run's is.
type Election struct {
	// Stopped is when the old primary first failed to answer ROLE or
	// answered it as something other than master; Answered when the new
	// primary took a write (see ObserveOptions.Probe).
	fault.Election
	// Switched is when the deployment first named another primary:
	// Sentinel's +switch-master (or get-master-addr-by-name), the owner of
	// the Cluster slot of ObserveOptions.Key.
	Switched time.Time
	// Notified is when a Sentinel's +switch-master for the master arrived
	// (zero on a Cluster, or when none did): Switched is the earlier of it
	// and the polls' first sight of the new primary.
	Notified time.Time
	// Old and New are the primaries' addresses before and after ("" when
	// none took over).
	Old, New string
	// Errors are the errors the polls met, oldest first: what a gateway
	// on the deployment's own client would have met too.
	Errors []Seen
	// Dropped counts errors beyond the first maxSeen.
	Dropped int
}

// Observer watches one election; Observe starts it, Wait ends it.
type Observer struct {
	cfg  *redisconn.Config
	opts ObserveOptions
	old  redisconn.Shard
	done chan struct{}
	// took is closed once the new primary took a write (Took).
	took     chan struct{}
	tookOnce sync.Once
	stop     context.CancelFunc
	mu       sync.Mutex
	e        Election
	probe    redis.UniversalClient
	// sentinels are clients of the URL's Sentinels, for the polls.
	sentinels []*redis.Client
}

// Observe starts watching the deployment cfg names — a Sentinel's master,
// or the Cluster shard serving opts.Key — for an election, before the
// failover is started, so the first moments are seen: it reads the
// primary now, polls roles every opts.Every, and on Sentinel subscribes to
// +switch-master. It writes nothing unless opts.Probe is set. Wait returns
// what it saw.
func Observe(ctx context.Context, cfg *redisconn.Config, opts ObserveOptions) (*Observer, error) {
	if opts.Every <= 0 {
		opts.Every = DefaultObserveEvery
	}
	if opts.Limit <= 0 {
		opts.Limit = DefaultObserveLimit
	}
	o := &Observer{cfg: cfg, opts: opts, done: make(chan struct{}), took: make(chan struct{})}
	var err error
	switch cfg.Mode() {
	case redisconn.ModeSentinel:
		o.old, err = cfg.SentinelShard(ctx)
	case redisconn.ModeCluster:
		if opts.Key == "" {
			return nil, exitcode.Errorf(exitcode.Usage, "observe an election on a Cluster: name a key of the shard to watch")
		}
		if opts.Probe != "" && keyspace.Slot(opts.Probe) != keyspace.Slot(opts.Key) {
			return nil, exitcode.Errorf(exitcode.Usage, "observe an election: probe key %q is not in the slot of %q; give it the same hash tag", opts.Probe, opts.Key)
		}
		o.old, err = cfg.ClusterShard(ctx, opts.Key)
	default:
		return nil, exitcode.Errorf(exitcode.Usage, "observe an election: %s is one server, with no election to watch", cfg)
	}
	if err != nil {
		return nil, exitcode.With(fmt.Errorf("observe an election: %w", err), exitcode.Unreachable)
	}
	o.e.Old = o.old.Primary
	if opts.Probe != "" {
		o.probe = cfg.NewClient()
	}
	if cfg.Mode() == redisconn.ModeSentinel {
		for _, addr := range cfg.Target().Addrs {
			o.sentinels = append(o.sentinels, cfg.NodeClient(addr, true))
		}
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.Limit)
	o.stop = cancel
	// The run's cancellation ends the watch as Wait would.
	go func() {
		select {
		case <-ctx.Done():
			cancel()
		case <-wctx.Done():
		}
	}()
	ready := make(chan struct{})
	if cfg.Mode() == redisconn.ModeSentinel {
		go o.subscribe(wctx, ready)
	} else {
		close(ready)
	}
	<-ready
	go o.poll(wctx)
	return o, nil
}

// Wait blocks until the election is over (the old primary stopped
// answering as primary and the new one took writes) or the watch's limit
// or the run's context ended, and returns what was seen.
func (o *Observer) Wait() Election {
	<-o.done
	o.mu.Lock()
	defer o.mu.Unlock()
	e := o.e
	e.Errors = append([]Seen(nil), o.e.Errors...)
	return e
}

// Took is closed once the new primary took a write (Election.Answered),
// which may be long before Wait returns: Sentinel demotes the old primary
// seconds later.
func (o *Observer) Took() <-chan struct{} { return o.took }

// Stop ends the watch now; Wait then returns at once.
func (o *Observer) Stop() { o.stop() }

// OldShard is the shard as it was when Observe started.
func (o *Observer) OldShard() redisconn.Shard { return o.old }

func (o *Observer) seen(node, what string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	msg := o.cfg.RedactError(err).Error()
	for i := len(o.e.Errors) - 1; i >= 0; i-- {
		s := &o.e.Errors[i]
		if s.Node == node && s.What == what {
			if s.Err == msg {
				s.Repeats++
				return
			}
			break
		}
	}
	if len(o.e.Errors) >= maxSeen {
		o.e.Dropped++
		return
	}
	o.e.Errors = append(o.e.Errors, Seen{At: time.Now(), Node: node, What: what, Err: msg})
}

// switched records the first time the deployment named a primary other
// than the old one.
func (o *Observer) switched(at time.Time, addr string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if addr == "" || addr == o.old.Primary || !o.e.Switched.IsZero() {
		return
	}
	o.e.Switched, o.e.New = at, addr
}

// subscribe listens for +switch-master on every Sentinel of the URL and
// closes ready once the subscriptions are confirmed (or failed).
func (o *Observer) subscribe(ctx context.Context, ready chan struct{}) {
	master := o.cfg.Target().MasterName
	var wg sync.WaitGroup
	for _, addr := range o.cfg.Target().Addrs {
		c := o.cfg.NodeClient(addr, true)
		ps := c.Subscribe(ctx, "+switch-master")
		if _, err := ps.Receive(ctx); err != nil {
			o.seen(addr, "subscribe +switch-master", err)
			ps.Close()
			c.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			defer ps.Close()
			ch := ps.Channel()
			for {
				select {
				case <-ctx.Done():
					return
				case m, ok := <-ch:
					if !ok {
						return
					}
					// "<master> <old ip> <old port> <new ip> <new port>"
					f := strings.Fields(m.Payload)
					if len(f) == 5 && f[0] == master {
						now := time.Now()
						o.mu.Lock()
						if o.e.Notified.IsZero() {
							o.e.Notified = now
						}
						o.mu.Unlock()
						o.switched(now, net.JoinHostPort(f[3], f[4]))
					}
				}
			}
		}()
	}
	close(ready)
	wg.Wait()
}

// poll reads the roles every period until the election is over or ctx
// ends, then closes done.
func (o *Observer) poll(ctx context.Context) {
	defer close(o.done)
	defer o.stop()
	old := o.cfg.NodeClient(o.old.Primary, false)
	defer old.Close()
	nodes := map[string]*redis.Client{}
	defer func() {
		for _, c := range nodes {
			c.Close()
		}
		for _, c := range o.sentinels {
			c.Close()
		}
	}()
	node := func(addr string) *redis.Client {
		if c, ok := nodes[addr]; ok {
			return c
		}
		c := o.cfg.NodeClient(addr, false)
		nodes[addr] = c
		return c
	}
	if o.probe != nil {
		defer func() {
			// The probe is the run's own key: gone with the watch.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			_ = o.probe.Del(dctx, o.opts.Probe).Err()
			o.probe.Close()
		}()
	}
	tick := time.NewTicker(o.opts.Every)
	defer tick.Stop()
	for n := 0; ; n++ {
		if o.round(ctx, old, node, n) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// round is one poll; it reports whether the election is over.
func (o *Observer) round(ctx context.Context, old *redis.Client, node func(string) *redis.Client, n int) bool {
	pctx, cancel := context.WithTimeout(ctx, max(o.opts.Every*5, 200*time.Millisecond))
	defer cancel()
	now := time.Now()
	o.mu.Lock()
	stopped := !o.e.Stopped.IsZero()
	o.mu.Unlock()
	if !stopped {
		role, err := roleOf(pctx, old)
		if err != nil {
			o.seen(o.old.Primary, "ROLE", err)
		}
		if err != nil || role != "master" {
			o.mu.Lock()
			o.e.Stopped = now
			o.mu.Unlock()
		}
	}
	if named, err := o.named(pctx); err != nil {
		o.seen(o.cfg.String(), "find the primary", err)
	} else {
		o.switched(now, named)
	}
	o.mu.Lock()
	cand, answered := o.e.New, !o.e.Answered.IsZero()
	o.mu.Unlock()
	if !answered {
		token := strconv.Itoa(n)
		wrote := true
		if o.probe != nil {
			if err := o.probe.Set(pctx, o.opts.Probe, token, time.Minute).Err(); err != nil {
				o.seen(o.cfg.String(), "write the probe", err)
				wrote = false
			}
		}
		if wrote && cand != "" && o.tookWrite(pctx, node(cand), token) {
			o.mu.Lock()
			o.e.Answered = time.Now()
			o.mu.Unlock()
			o.tookOnce.Do(func() { close(o.took) })
			answered = true
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return answered && !o.e.Stopped.IsZero()
}

// tookWrite reports whether c is a primary now and, with a probe, holds
// the probe's latest token.
func (o *Observer) tookWrite(ctx context.Context, c *redis.Client, token string) bool {
	role, err := roleOf(ctx, c)
	if err != nil {
		o.seen(c.Options().Addr, "ROLE", err)
		return false
	}
	if role != "master" {
		return false
	}
	if o.probe == nil {
		return true
	}
	v, err := c.Get(ctx, o.opts.Probe).Result()
	return err == nil && v == token
}

// named is the primary the deployment names now.
func (o *Observer) named(ctx context.Context) (string, error) {
	if o.cfg.Mode() == redisconn.ModeCluster {
		sh, err := o.cfg.ClusterShard(ctx, o.opts.Key)
		return sh.Primary, err
	}
	var last error
	for _, s := range o.sentinels {
		m, err := s.Do(ctx, "SENTINEL", "get-master-addr-by-name", o.cfg.Target().MasterName).StringSlice()
		if err == nil && len(m) == 2 {
			return net.JoinHostPort(m[0], m[1]), nil
		}
		if err == nil {
			err = fmt.Errorf("no address for master %q", o.cfg.Target().MasterName)
		}
		last = fmt.Errorf("%s: %w", s.Options().Addr, err)
	}
	return "", last
}

func roleOf(ctx context.Context, c *redis.Client) (string, error) {
	r, err := c.Do(ctx, "ROLE").Slice()
	if err != nil {
		return "", err
	}
	if len(r) == 0 {
		return "", fmt.Errorf("empty ROLE reply")
	}
	s, _ := r[0].(string)
	return s, nil
}
