package hotpath

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// ErrClosed is returned by a closed Pool.
var ErrClosed = errors.New("hotpath: pool closed")

// ErrPoolTimeout is returned when every connection stayed busy for the
// pool timeout, or until the call's deadline: nothing was sent.
var ErrPoolTimeout = errors.New("hotpath: no free connection within the pool timeout")

// ErrProtocol marks a reply of a shape the call cannot take (EvalInts
// given something other than an array of integers).
var ErrProtocol = errors.New("hotpath: unexpected reply")

// Error is an error reply from the server. rueidis drops the "ERR "
// that starts the generic ones; every other code (NOSCRIPT, READONLY,
// WRONGPASS...) stays.
type Error string

func (e Error) Error() string { return string(e) }

// Options configure a Pool.
type Options struct {
	// Dial opens a connection (TLS and address resolution included).
	Dial func(ctx context.Context) (net.Conn, error)
	// Username and Password, when set, are sent with AUTH on every new
	// connection; DB with SELECT; ClientName with CLIENT SETNAME.
	Username, Password string
	DB                 int
	ClientName         string
	// Size is the most connections open at once (default 10).
	Size int
	// Timeout bounds each call whose context has no deadline (0: none).
	Timeout time.Duration
	// PoolTimeout is how long a call waits for a free connection when
	// Size are busy (default 4s, as go-redis).
	PoolTimeout time.Duration
}

// Pool runs calls on one server through a rueidis client. It is safe for
// concurrent use.
type Pool struct {
	o Options
	// tokens holds one token per call under way, so at most Size run at
	// once: rueidis's own pool then never waits, and a wait here is
	// bounded by the pool timeout and the call's deadline.
	tokens chan struct{}
	closed atomic.Bool

	mu     sync.Mutex                     // held while the client is made
	client atomic.Pointer[rueidis.Client] // made on first use (see open)
	// dialing is set while rueidis.NewClient runs: the connection it
	// dials for its auto-pipelining is never used with auto-pipelining
	// off, so that dial is refused (see open).
	dialing atomic.Bool

	// conns counts live connections; gen is bumped when a server answers
	// READONLY, retiring every connection dialed before.
	conns atomic.Int64
	gen   atomic.Uint64
}

// New returns a pool; it dials lazily.
func New(o Options) *Pool {
	if o.Size <= 0 {
		o.Size = 10
	}
	if o.PoolTimeout <= 0 {
		o.PoolTimeout = 4 * time.Second
	}
	return &Pool{o: o, tokens: make(chan struct{}, o.Size)}
}

// ForClient is FromClient for any go-redis client: nil for a Cluster
// (which keeps go-redis for its slot routing) or a client whose options
// cannot be mirrored, and callers then keep using c.
func ForClient(c redis.UniversalClient) *Pool {
	if rc, ok := c.(*redis.Client); ok {
		if p, ok := FromClient(rc); ok {
			return p
		}
	}
	return nil
}

// FromClient returns a pool that connects as c does: its dialer (so TLS
// and the fault switch's injected network faults), credentials, database,
// client name, pool size and timeouts. ok is false when c's options
// cannot be mirrored (credential providers, an OnConnect hook, a Sentinel
// client), and callers keep using c.
func FromClient(c *redis.Client) (p *Pool, ok bool) {
	opt := c.Options()
	// A Sentinel client ("FailoverClient" is go-redis's address for one)
	// closes its connections to the old primary when Sentinel announces a
	// new one; a mirrored pool would not hear of it and keep writing to the
	// old primary.
	if opt.Addr == "FailoverClient" {
		return nil, false
	}
	if opt.CredentialsProvider != nil || opt.CredentialsProviderContext != nil ||
		opt.StreamingCredentialsProvider != nil || opt.OnConnect != nil || opt.Dialer == nil {
		return nil, false
	}
	timeout := max(opt.ReadTimeout, opt.WriteTimeout)
	if opt.ReadTimeout < 0 || opt.WriteTimeout < 0 {
		timeout = 0
	}
	dial, network, addr := opt.Dialer, opt.Network, opt.Addr
	if network == "" {
		network = "tcp"
	}
	return New(Options{
		Dial:     func(ctx context.Context) (net.Conn, error) { return dial(ctx, network, addr) },
		Username: opt.Username, Password: opt.Password, DB: opt.DB, ClientName: opt.ClientName,
		Size: opt.PoolSize, Timeout: timeout, PoolTimeout: opt.PoolTimeout,
	}), true
}

// errMuxDial refuses the connection rueidis.NewClient dials for
// auto-pipelining, which this pool never uses.
var errMuxDial = errors.New("hotpath: no auto-pipelining connection")

// open returns the rueidis client, making it on first use. Its options
// are the point of this package:
//   - DisableAutoPipelining: every call takes a connection of its own
//     from rueidis's pool and runs on it synchronously, as a simulated
//     gateway's client does (scripts/clientbench: with auto-pipelining
//     rueidis costs more CPU per decision here, without it about the
//     same as the hand-written client it replaced);
//   - DisableRetry: a request that may have reached the server is never
//     sent again (one run twice would count twice); the only request sent
//     once more is one of which no byte went out (see exchange);
//   - DisableCache and AlwaysRESP2: no client tracking, and replies in the
//     RESP2 shapes go-redis gives and the embedded Redis speaks (over
//     RESP3 a script's true and false would come back as booleans);
//   - DialCtxFn: the go-redis client's own dialer, so TLS, the fault
//     switch's network faults and address resolution are the same;
//   - ConnWriteTimeout effectively off: every call carries its own
//     deadline (see until), which rueidis applies to the connection.
func (p *Pool) open() (rueidis.Client, error) {
	if c := p.client.Load(); c != nil {
		return *c, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.client.Load(); c != nil {
		return *c, nil
	}
	if p.closed.Load() {
		return nil, ErrClosed
	}
	p.dialing.Store(true)
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:           []string{"hotpath"}, // the dialer knows the address
		ForceSingleClient:     true,
		DisableAutoPipelining: true,
		DisableRetry:          true,
		DisableCache:          true,
		AlwaysRESP2:           true,
		ClientSetInfo:         rueidis.DisableClientSetInfo,
		Username:              p.o.Username,
		Password:              p.o.Password,
		SelectDB:              p.o.DB,
		ClientName:            p.o.ClientName,
		BlockingPoolSize:      p.o.Size,
		ConnWriteTimeout:      math.MaxInt64 / 4,
		ReadBufferEachConn:    16 << 10,
		WriteBufferEachConn:   16 << 10,
		DialCtxFn:             p.dial,
	})
	p.dialing.Store(false)
	if c == nil {
		return nil, err
	}
	// err is the refused auto-pipelining dial: ForceSingleClient keeps
	// the client all the same.
	p.client.Store(&c)
	return c, nil
}

// Close closes every connection; calls after it fail with ErrClosed.
func (p *Pool) Close() error {
	p.closed.Store(true)
	p.mu.Lock()
	c := p.client.Load()
	p.mu.Unlock()
	if c != nil {
		(*c).Close()
	}
	return nil
}

// Warm opens connections until n are open (at most Size), so requests
// that come at once find them instead of dialing inside the requests a run
// measures. Each new connection answers its setup (HELLO, AUTH, SELECT)
// and a PING: a dial returns once the kernel has the connection, and
// without a round trip the server's own accept and client setup would
// still land inside the run. rueidis opens a connection only when every
// open one is taken, so Warm sends PINGs from n callers released at once,
// round after round, until n are open. It stops at the first error.
func (p *Pool) Warm(ctx context.Context, n int) error {
	n = min(n, p.o.Size)
	c, err := p.open()
	if err != nil {
		return err
	}
	for round := 0; p.conns.Load() < int64(n); round++ {
		if round == 100 {
			return fmt.Errorf("warm: %d of %d connections open after %d rounds of PING", p.conns.Load(), n, round)
		}
		start := make(chan struct{})
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				errs[i] = p.exchange(ctx, time.Time{}, func(ctx context.Context) error {
					return c.Do(ctx, c.B().Ping().Build()).Error()
				})
			})
		}
		close(start)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("PING: %w", err)
		}
	}
	return nil
}

// deadlineCtx gives rueidis a call's deadline without a timer: with
// auto-pipelining off and at most Size calls under way (p.tokens), rueidis
// reads only Deadline and Err of a call's context (it sets the deadline on
// the connection), never waits on Done. A dial gets a real context (see
// dialCtx). This spares every decision a context.WithDeadline.
type deadlineCtx struct {
	context.Context
	d time.Time
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.d, true }

// until is the earlier of deadline (zero: none) and ctx's own, or the
// pool's timeout from now when neither is set.
func (p *Pool) until(ctx context.Context, deadline time.Time) time.Time {
	d, ok := ctx.Deadline()
	switch {
	case ok && (deadline.IsZero() || d.Before(deadline)):
		return d
	case !deadline.IsZero():
		return deadline
	case p.o.Timeout > 0:
		return time.Now().Add(p.o.Timeout)
	}
	return time.Time{}
}

// call is one request's turn at the pool: a token held, the context
// carrying its deadline, and what is left of its leave to be sent again.
type call struct {
	p           *Pool
	ctx         context.Context // the caller's, for its cancellation
	cctx        context.Context // the one rueidis gets, with the deadline
	deadline    time.Time
	stale       int
	failedWrite bool
}

// begin starts a call once a token is free; end must follow.
func (p *Pool) begin(ctx context.Context, deadline time.Time) (call, error) {
	if p.closed.Load() {
		return call{}, ErrClosed
	}
	deadline = p.until(ctx, deadline)
	if err := p.take(ctx, deadline); err != nil {
		return call{}, err
	}
	c := call{p: p, ctx: ctx, cctx: ctx, deadline: deadline}
	if d, ok := ctx.Deadline(); !deadline.IsZero() && (!ok || !d.Equal(deadline)) {
		c.cctx = &deadlineCtx{Context: ctx, d: deadline}
	}
	return c, nil
}

func (c *call) end() { <-c.p.tokens }

// again reports whether a request that failed with err is to be sent
// once more. Only one of which no byte went out (errNotSent: a connection
// the server had closed, found before the write; or a write that failed
// at once) is: the server cannot have seen it. For a closed connection
// that is as often as the pool has connections to discard, for a failed
// write once. Once a byte may have reached the server, the request is
// never sent again: a connection that dies before the reply does not say
// whether the server ran it (CLIENT KILL can free a client between running
// its EVALSHA and writing the reply), and one run twice would count twice.
func (c *call) again(err error) bool {
	if err == nil {
		return false // before ns, whose address escapes: no allocation per call
	}
	var ns *notSent
	if !errors.As(err, &ns) || c.p.closed.Load() || c.ctx.Err() != nil ||
		(!c.deadline.IsZero() && !time.Now().Before(c.deadline)) {
		return false
	}
	if ns.stale {
		c.stale++
		return c.stale <= c.p.o.Size
	}
	if c.failedWrite {
		return false
	}
	c.failedWrite = true
	return true
}

// exchange runs do within one call, again while again says so.
func (p *Pool) exchange(ctx context.Context, deadline time.Time, do func(ctx context.Context) error) error {
	c, err := p.begin(ctx, deadline)
	if err != nil {
		return err
	}
	defer c.end()
	for {
		if err := do(c.cctx); !c.again(err) {
			return err
		}
	}
}

// take waits for a token, at most the pool timeout and until deadline
// (zero: none).
func (p *Pool) take(ctx context.Context, deadline time.Time) error {
	select {
	case p.tokens <- struct{}{}:
		return nil
	default:
	}
	wait := p.o.PoolTimeout
	if !deadline.IsZero() {
		wait = min(wait, time.Until(deadline))
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case p.tokens <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return ErrPoolTimeout
	}
}

// client returns the rueidis client for a call.
func (p *Pool) rc() (rueidis.Client, error) {
	if p.closed.Load() {
		return nil, ErrClosed
	}
	return p.open()
}

// replyErr turns rueidis's error into this package's: a server error
// reply is Error (a READONLY one retires the pool's connections, so the
// next call dials the current primary: a Sentinel dialer resolves it
// again), and a closed client's error is ErrClosed.
func (p *Pool) replyErr(err error) error {
	if err == nil {
		return nil
	}
	if re, ok := rueidis.IsRedisErr(err); ok {
		if re.IsNil() {
			return nil
		}
		s := re.Error()
		if strings.HasPrefix(s, "READONLY") {
			p.gen.Add(1)
		}
		return Error(s)
	}
	if errors.Is(err, rueidis.ErrClosing) && p.closed.Load() {
		return ErrClosed
	}
	return err
}

func isNoScript(err error) bool {
	if err == nil {
		return false // before re, whose address escapes: no allocation per call
	}
	var re Error
	return errors.As(err, &re) && strings.HasPrefix(string(re), "NOSCRIPT")
}

// Do sends cmds in one write, until deadline (zero: none), and reads one
// reply per command, each as Eval returns it, an error reply as Error in
// its place. err is for the exchange itself (I/O, protocol).
func (p *Pool) Do(ctx context.Context, deadline time.Time, cmds ...[]string) ([]any, error) {
	c, err := p.rc()
	if err != nil {
		return nil, err
	}
	var out []any
	err = p.exchange(ctx, deadline, func(ctx context.Context) error {
		multi := make(rueidis.Commands, len(cmds))
		for i, cmd := range cmds {
			multi[i] = c.B().Arbitrary(cmd...).Build()
		}
		res := c.DoMulti(ctx, multi...)
		out = make([]any, len(cmds))
		for i, r := range res {
			if err := r.NonRedisError(); err != nil {
				return err
			}
			msg, _ := r.ToMessage()
			v, err := p.value(&msg, 0)
			if err != nil {
				if re, ok := err.(Error); ok {
					out[i] = re
					continue
				}
				return err
			}
			out[i] = v
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
