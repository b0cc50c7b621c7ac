package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/redisconn"
)

// Endpoint is one API endpoint behind the gateways: its share of the
// traffic and its failure policy. All endpoints share the identity's limit.
type Endpoint struct {
	Name   string
	Share  float64
	Policy limiter.Policy
}

// Options configure a Set.
type Options struct {
	// N is the number of gateways (at least 1).
	N       int
	Limiter limiter.Config
	// Endpoints: at least one; empty means one endpoint "default", share 1.
	Endpoints []Endpoint
	// NewClient is called once per gateway, so each has its own pool. It is
	// not needed by the local designs. Clients built with
	// ContextTimeoutEnabled let policies enforce their timeout without a
	// goroutine per call; others work too, at that cost.
	NewClient func() redis.UniversalClient
	// ClockSkew is the largest clock offset: gateway i of N gets
	// -skew + 2*skew*i/(N-1), spread evenly over [-skew, +skew].
	ClockSkew time.Duration
	// Now is the base clock (default time.Now).
	Now func() time.Time
}

// Decider is a set of gateways as the code that sends them requests sees
// it: the simulated target and the HTTP gateway. Set satisfies it.
type Decider interface {
	// Decide asks gateway, under endpoint's policy, whether id may make
	// one request now.
	Decide(ctx context.Context, gateway, endpoint int, id string) (limiter.Decision, error)
	// Names are the gateways' names, Endpoints the endpoints', in order.
	Names() []string
	Endpoints() []string
	// Stats are counters over the set's life.
	Stats() Stats
}

var _ Decider = (*Set)(nil)

// ErrGatewayDown is what a killed gateway answers.
var ErrGatewayDown = errors.New("gateway down")

// Set is N simulated gateways. Decide is safe for concurrent use.
type Set struct {
	gws     []*gw
	names   []string
	epNames []string
	eps     []Endpoint
	byPath  [16]atomic.Int64
	errors  atomic.Int64
	redis   bool
	closed  atomic.Bool
}

type gw struct {
	name     string
	offset   time.Duration
	client   redis.UniversalClient
	detector *limiter.FailoverDetector
	dead     atomic.Bool
	// cur is the running process's limiters; Revive swaps in a new one.
	cur atomic.Pointer[proc]
	// build makes a fresh proc, as a restarted gateway starts.
	build func() (*proc, error)
	// mu guards retired: the procs of earlier lives, whose lease figures
	// still count and which Close closes.
	mu      sync.Mutex
	retired []*proc
}

// proc is one life of a gateway process: its limiters and what they hold.
type proc struct {
	lease *limiter.Lease
	// closer is the limiter itself when it holds connections of its own.
	closer io.Closer
	eps    []limiter.Limiter
	// warm opens the gateway's connections (see Set.Warm); nil for the
	// local designs.
	warm func(ctx context.Context, conns int) error
}

// New builds and starts the gateways. It checks the configuration
// (exitcode.Usage), pings Redis through the first gateway and writes the
// failover marker when an endpoint needs it (exitcode.Unreachable).
func New(ctx context.Context, o Options) (*Set, error) {
	if o.N < 1 {
		return nil, exitcode.Errorf(exitcode.Usage, "gateways: %d, want at least 1", o.N)
	}
	if err := o.Limiter.Validate(); err != nil {
		return nil, exitcode.With(fmt.Errorf("gateways: %w", err), exitcode.Usage)
	}
	eps := o.Endpoints
	if len(eps) == 0 {
		eps = []Endpoint{{Name: "default", Share: 1}}
	}
	needDetector := false
	for _, e := range eps {
		if err := e.Policy.Validate(); err != nil {
			return nil, exitcode.With(fmt.Errorf("endpoint %q: %w", e.Name, err), exitcode.Usage)
		}
		if e.Share < 0 || math.IsNaN(e.Share) {
			return nil, exitcode.Errorf(exitcode.Usage, "endpoint %q: share %v must not be negative", e.Name, e.Share)
		}
		needDetector = needDetector || e.Policy.OnFailover == limiter.OnFailoverDeny
	}
	useRedis := !limiter.IsLocal(o.Limiter.Algorithm)
	if useRedis && o.NewClient == nil {
		return nil, exitcode.Errorf(exitcode.Usage, "gateways: %s needs Redis, but no client was given", o.Limiter.Algorithm)
	}
	base := o.Now
	if base == nil {
		base = time.Now
	}
	s := &Set{eps: eps, redis: useRedis}
	for _, e := range eps {
		s.epNames = append(s.epNames, e.Name)
	}
	for i := 0; i < o.N; i++ {
		g := &gw{name: fmt.Sprintf("gw-%02d", i), offset: offset(i, o.N, o.ClockSkew)}
		s.gws = append(s.gws, g)
		s.names = append(s.names, g.name)
		off := g.offset
		clock := func() time.Time { return base().Add(off) }
		if useRedis {
			g.client = o.NewClient()
		}
		if useRedis && i == 0 {
			if err := ping(ctx, g.client, eps); err != nil {
				s.Close()
				return nil, err
			}
		}
		if useRedis && needDetector {
			every, timeout := time.Duration(0), time.Duration(0)
			for _, e := range eps {
				if e.Policy.OnFailover == limiter.OnFailoverDeny {
					every, timeout = e.Policy.CheckEvery, e.Policy.Timeout
					break
				}
			}
			g.detector = limiter.NewFailoverDetector(g.client, o.Limiter.Prefix, every, timeout)
			if err := g.detector.Start(ctx); err != nil {
				s.Close()
				return nil, exitcode.With(fmt.Errorf("gateway %s: %w", g.name, err), exitcode.Unreachable)
			}
		}
		g.build = func() (*proc, error) { return newProc(o, eps, g, clock, useRedis) }
		p, err := g.build()
		if err != nil {
			s.Close()
			return nil, exitcode.With(fmt.Errorf("gateway %s: %w", g.name, err), exitcode.Usage)
		}
		g.cur.Store(p)
	}
	return s, nil
}

// newProc builds one life of gateway g: its limiter, wrapped in each
// endpoint's policy.
func newProc(o Options, eps []Endpoint, g *gw, clock func() time.Time, useRedis bool) (*proc, error) {
	l, err := limiter.New(o.Limiter, g.client, clock)
	if err != nil {
		return nil, err
	}
	p := &proc{}
	p.lease, _ = l.(*limiter.Lease)
	if c, ok := l.(io.Closer); ok && p.lease == nil {
		p.closer = c
	}
	if w, ok := l.(limiter.Warmer); ok {
		p.warm = w.Warm
	} else if useRedis {
		client := g.client
		p.warm = func(ctx context.Context, n int) error { return redisconn.Warm(ctx, client, n) }
	}
	for _, e := range eps {
		if !useRedis {
			p.eps = append(p.eps, l)
			continue
		}
		opts := []limiter.PolicyOption{limiter.WithClock(clock), limiter.WithContextHonored(limiter.HonorsContext(g.client))}
		if g.detector != nil {
			opts = append(opts, limiter.WithDetector(g.detector))
		}
		p.eps = append(p.eps, limiter.WithPolicy(l, e.Policy, o.Limiter.Limit, opts...))
	}
	return p, nil
}

// close stops the proc's background work and closes what it holds.
func (p *proc) close(name string) error {
	if p.lease != nil {
		p.lease.Close()
	}
	if p.closer != nil {
		if err := p.closer.Close(); err != nil {
			return fmt.Errorf("close %s limiter: %w", name, err)
		}
	}
	return nil
}

func ping(ctx context.Context, c redis.UniversalClient, eps []Endpoint) error {
	timeout := time.Second
	for _, e := range eps {
		if e.Policy.Timeout > timeout {
			timeout = e.Policy.Timeout
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		return exitcode.With(fmt.Errorf("gateways: ping Redis: %w", err), exitcode.Unreachable)
	}
	// A Redis out of memory answers PING but refuses every limiter call,
	// which a run would only show as requests its policy decided.
	if err := redisconn.OutOfMemory(ctx, c); err != nil {
		return exitcode.With(fmt.Errorf("Redis cannot count: %w", err), exitcode.Unreachable)
	}
	return nil
}

// Warm opens up to conns connections on every gateway at once (and loads
// its script), as gateways that have served for a while have them open. A
// dial inside a measured request is rlctl's cost, not the limiter's, and
// under a burst one slow dial makes requests wait, which opens more.
func (s *Set) Warm(ctx context.Context, conns int) error {
	var wg sync.WaitGroup
	errs := make([]error, len(s.gws))
	for i, g := range s.gws {
		warm := g.cur.Load().warm
		if warm == nil {
			continue
		}
		wg.Go(func() {
			if err := warm(ctx, conns); err != nil {
				errs[i] = fmt.Errorf("gateway %s: warm: %w", g.name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// offset spreads gateway clocks evenly over [-skew, +skew].
func offset(i, n int, skew time.Duration) time.Duration {
	if n < 2 || skew == 0 {
		return 0
	}
	return -skew + time.Duration(float64(2*skew)*float64(i)/float64(n-1))
}

// Decide asks gateway's limiter, under endpoint's policy, whether id may
// make one request now. A killed gateway answers ErrGatewayDown.
func (s *Set) Decide(ctx context.Context, gateway, endpoint int, id string) (limiter.Decision, error) {
	if gateway < 0 || gateway >= len(s.gws) {
		return limiter.Decision{}, fmt.Errorf("gateway %d of %d", gateway, len(s.gws))
	}
	if endpoint < 0 || endpoint >= len(s.eps) {
		return limiter.Decision{}, fmt.Errorf("endpoint %d of %d", endpoint, len(s.eps))
	}
	g := s.gws[gateway]
	if g.dead.Load() {
		s.errors.Add(1)
		return limiter.Decision{}, fmt.Errorf("%s: %w", g.name, ErrGatewayDown)
	}
	d, err := g.cur.Load().eps[endpoint].Allow(ctx, id, 1)
	if err != nil {
		s.errors.Add(1)
		return d, fmt.Errorf("%s: %w", g.name, err)
	}
	if int(d.By) < len(s.byPath) {
		s.byPath[d.By].Add(1)
	}
	return d, nil
}

// Names are the gateways' names: "gw-00", "gw-01", ...
func (s *Set) Names() []string { return s.names }

// Endpoints are the endpoints' names, in order.
func (s *Set) Endpoints() []string { return s.epNames }

// Shares are the endpoints' traffic shares, in order.
func (s *Set) Shares() []float64 {
	out := make([]float64, len(s.eps))
	for i, e := range s.eps {
		out[i] = e.Share
	}
	return out
}

// Offset is gateway's clock offset.
func (s *Set) Offset(gateway int) time.Duration { return s.gws[gateway].offset }

// Kill takes gateway down: from now on it answers ErrGatewayDown, and the
// lease slices it holds are stranded until their window ends.
func (s *Set) Kill(gateway int) {
	if gateway < 0 || gateway >= len(s.gws) {
		return
	}
	g := s.gws[gateway]
	g.dead.Store(true)
	if l := g.cur.Load().lease; l != nil {
		l.Kill()
	}
}

// Revive brings a killed gateway back as a restarted process would come
// back: with fresh limiters and no memory of its earlier life (local
// counts, lease slices), on the same client and clock. The earlier life's
// lease figures still count in Stats. A gateway that is not down is left
// alone.
func (s *Set) Revive(gateway int) error {
	if gateway < 0 || gateway >= len(s.gws) {
		return fmt.Errorf("gateway %d of %d", gateway, len(s.gws))
	}
	g := s.gws[gateway]
	if !g.dead.Load() || s.closed.Load() {
		return nil
	}
	p, err := g.build()
	if err != nil {
		return fmt.Errorf("revive %s: %w", g.name, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.closed.Load() {
		// Close has run (or is running) and will not see p
		return p.close(g.name)
	}
	g.retired = append(g.retired, g.cur.Swap(p))
	g.dead.Store(false)
	return nil
}

// procs are every life of g so far, the running one last.
func (g *gw) procs() []*proc {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := slices.Clone(g.retired)
	if p := g.cur.Load(); p != nil {
		out = append(out, p)
	}
	return out
}

// Stats are counters over a Set's life.
type Stats struct {
	// ByPath counts decisions by the path that decided ("redis",
	// "local", "fail-open", "fail-closed", "fallback", "lease",
	// "failover-deny").
	ByPath map[string]int64
	// Errors counts Decide calls that reached no decision.
	Errors int64
	// Lease figures, summed over gateways (leasing only), in requests:
	// granted from Redis, spent, unspent (= granted - spent: expired, still
	// held, or stranded), and stranded by killed gateways.
	LeaseGranted, LeaseSpent, LeaseUnspent, LeaseStranded, LeaseExpired int64
	// Failovers counts failovers detected, summed over gateways.
	Failovers int64
}

// Stats returns the counters so far.
func (s *Set) Stats() Stats {
	st := Stats{ByPath: map[string]int64{}, Errors: s.errors.Load()}
	for i := range s.byPath {
		if n := s.byPath[i].Load(); n > 0 {
			st.ByPath[decision.By(i).String()] = n
		}
	}
	for _, g := range s.gws {
		for _, p := range g.procs() {
			if p.lease == nil {
				continue
			}
			ls := p.lease.Stats()
			st.LeaseGranted += ls.Granted
			st.LeaseSpent += ls.Spent
			st.LeaseUnspent += ls.Unspent()
			st.LeaseStranded += ls.Stranded
			st.LeaseExpired += ls.Expired
		}
		if g.detector != nil {
			st.Failovers += g.detector.Detections()
		}
	}
	return st
}

// Close stops background work (top-ups, marker reads) and closes every
// gateway's client.
func (s *Set) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	var errs []error
	for _, g := range s.gws {
		if g.detector != nil {
			g.detector.Close()
		}
		for _, p := range g.procs() {
			if err := p.close(g.name); err != nil {
				errs = append(errs, err)
			}
		}
		if g.client != nil {
			if err := g.client.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close %s client: %w", g.name, err))
			}
		}
	}
	return errors.Join(errs...)
}
