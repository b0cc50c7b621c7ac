package resp

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrClosed is returned by a closed Pool.
var ErrClosed = errors.New("resp: pool closed")

// ErrPoolTimeout is returned when every connection stayed busy for the
// pool timeout.
var ErrPoolTimeout = errors.New("resp: no free connection within the pool timeout")

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

// Pool is a set of connections to one server. It is safe for concurrent
// use.
type Pool struct {
	o Options
	// tokens holds one token per open connection, so at most Size exist.
	tokens chan struct{}
	idle   chan *Conn
	closed atomic.Bool
}

// New returns a pool; it dials lazily.
func New(o Options) *Pool {
	if o.Size <= 0 {
		o.Size = 10
	}
	if o.PoolTimeout <= 0 {
		o.PoolTimeout = 4 * time.Second
	}
	return &Pool{o: o, tokens: make(chan struct{}, o.Size), idle: make(chan *Conn, o.Size)}
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
// and a Sentinel-resolved primary), credentials, database, client name,
// pool size and timeouts. ok is false when c's options cannot be mirrored
// (credential providers or an OnConnect hook), and callers keep using c.
func FromClient(c *redis.Client) (p *Pool, ok bool) {
	opt := c.Options()
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

// Close closes the idle connections now and every borrowed one when it is
// returned.
func (p *Pool) Close() error {
	p.closed.Store(true)
	p.drain()
	return nil
}

func (p *Pool) drain() {
	for {
		select {
		case c := <-p.idle:
			c.Close()
			<-p.tokens
		default:
			return
		}
	}
}

// Warm opens connections until n are open (at most Size), so requests
// that come at once find them instead of dialing inside the requests a run
// measures. Each answers a PING first: a dial returns once the kernel has
// the connection, and without a round trip the server's own accept and
// client setup would still land inside the run. It stops at the first
// error.
func (p *Pool) Warm(ctx context.Context, n int) error {
	for len(p.tokens) < min(n, p.o.Size) {
		select {
		case p.tokens <- struct{}{}:
		default:
			return nil // others opened the rest meanwhile
		}
		c, err := p.dial(ctx, time.Time{})
		if err != nil {
			return err
		}
		c.begin(1)
		c.arg("PING")
		if err = c.flush(p.deadline(ctx)); err == nil {
			_, err = c.readAny(0)
		}
		if err != nil {
			c.Close()
			<-p.tokens
			return fmt.Errorf("PING: %w", err)
		}
		p.put(c)
	}
	return nil
}

// get borrows a connection, waiting at most the pool timeout, or until
// deadline when that comes first (zero: none). Every idle connection is
// checked before it is handed out, however briefly it sat idle: the server
// may have closed it (CLIENT KILL, its timeout, a restart), and a request
// written on it would be lost.
func (p *Pool) get(ctx context.Context, deadline time.Time) (*Conn, error) {
	if p.closed.Load() {
		return nil, ErrClosed
	}
	for {
		select {
		case c := <-p.idle:
			if c.probe.Alive() {
				return c, nil
			}
			c.Close()
			<-p.tokens
			continue
		default:
		}
		break
	}
	select {
	case p.tokens <- struct{}{}:
		return p.dial(ctx, deadline)
	default:
	}
	// Every connection is busy: wait for one to come back, or for room.
	wait := p.o.PoolTimeout
	if !deadline.IsZero() {
		wait = min(wait, time.Until(deadline))
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case c := <-p.idle:
		if c.probe.Alive() {
			return c, nil
		}
		c.Close()
		return p.dial(ctx, deadline) // in its place, with its token
	case p.tokens <- struct{}{}:
		return p.dial(ctx, deadline)
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, ErrPoolTimeout
	}
}

func (p *Pool) put(c *Conn) {
	if c.bad || p.closed.Load() {
		c.Close()
		<-p.tokens
		return
	}
	p.idle <- c // never blocks: at most Size connections exist
	if p.closed.Load() {
		p.drain() // Close ran meanwhile and may have missed this one
	}
}

// exchange runs send on a borrowed connection and gives it back. When the
// write failed before any byte went out (errNotSent), the server cannot
// have seen the request, so send runs once more on another connection.
// Once a byte may have reached the server, the request is never sent again:
// a connection that dies before the reply does not say whether the server
// ran it (CLIENT KILL can free a client between running its EVALSHA and
// writing the reply), and one run twice would count twice.
func (p *Pool) exchange(ctx context.Context, deadline time.Time, send func(c *Conn) error) error {
	for retried := false; ; retried = true {
		c, err := p.get(ctx, deadline)
		if err != nil {
			return err
		}
		err = send(c)
		p.put(c)
		if retried || !errors.Is(err, errNotSent) || ctx.Err() != nil || (!deadline.IsZero() && !time.Now().Before(deadline)) {
			return err
		}
	}
}

// dial opens and sets up a connection, by deadline when one is given (a
// policy's timeout must bound a dial to a Redis that drops packets, too);
// the caller holds a token, which is given back on failure.
func (p *Pool) dial(ctx context.Context, deadline time.Time) (*Conn, error) {
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	nc, err := p.o.Dial(ctx)
	if err != nil {
		<-p.tokens
		return nil, err
	}
	c := newConn(nc)
	if err := p.setup(ctx, c); err != nil {
		c.Close()
		<-p.tokens
		return nil, err
	}
	return c, nil
}

// setup sends AUTH, SELECT and CLIENT SETNAME as needed, pipelined.
func (p *Pool) setup(ctx context.Context, c *Conn) error {
	var cmds [][]string
	switch {
	case p.o.Username != "":
		cmds = append(cmds, []string{"AUTH", p.o.Username, p.o.Password})
	case p.o.Password != "":
		cmds = append(cmds, []string{"AUTH", p.o.Password})
	}
	if p.o.DB != 0 {
		cmds = append(cmds, []string{"SELECT", fmt.Sprint(p.o.DB)})
	}
	if p.o.ClientName != "" {
		cmds = append(cmds, []string{"CLIENT", "SETNAME", p.o.ClientName})
	}
	if len(cmds) == 0 {
		return nil
	}
	c.buf = c.buf[:0]
	for _, cmd := range cmds {
		c.more(len(cmd))
		for _, a := range cmd {
			c.arg(a)
		}
	}
	if err := c.flush(p.deadline(ctx)); err != nil {
		return err
	}
	for _, cmd := range cmds {
		if err := c.readStatus(); err != nil {
			// The error names the command, never its arguments: AUTH's
			// would carry the password.
			return fmt.Errorf("%s: %w", cmd[0], err)
		}
	}
	return nil
}

func (p *Pool) deadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	if p.o.Timeout > 0 {
		return time.Now().Add(p.o.Timeout)
	}
	return time.Time{}
}

// Script is a Lua script and its SHA1, for EVALSHA.
type Script struct {
	src, sha string
}

// NewScript computes src's SHA1 once.
func NewScript(src string) *Script {
	h := sha1.Sum([]byte(src))
	return &Script{src: src, sha: hex.EncodeToString(h[:])}
}

// maxArgs bounds Args: the designs pass at most six values.
const maxArgs = 8

// Args are a script's keys and arguments. Declared as a local variable
// they stay on the stack, so building a call allocates nothing. Keys must
// be added before the other arguments.
type Args struct {
	strs  [maxArgs]string
	ints  [maxArgs]int64
	isInt [maxArgs]bool
	n     int
	keys  int
}

// Key adds a key.
func (a *Args) Key(k string) {
	if a.keys != a.n {
		panic("resp: Args.Key after an argument")
	}
	a.String(k)
	a.keys++
}

// String adds a string argument.
func (a *Args) String(s string) {
	a.strs[a.n], a.isInt[a.n] = s, false
	a.n++
}

// Int adds an integer argument.
func (a *Args) Int(v int64) {
	a.ints[a.n], a.isInt[a.n] = v, true
	a.n++
}

// Add appends b's values (keys included) as plain arguments.
func (a *Args) Add(b *Args) {
	for i := 0; i < b.n; i++ {
		a.strs[a.n+i], a.ints[a.n+i], a.isInt[a.n+i] = b.strs[i], b.ints[i], b.isInt[i]
	}
	a.n += b.n
}

// Values returns the keys and the other arguments in the form go-redis
// takes them, for a caller that runs the same script through go-redis
// (on a Cluster).
func (a *Args) Values() (keys []string, args []any) {
	keys = append(keys, a.strs[:a.keys]...)
	for i := a.keys; i < a.n; i++ {
		if a.isInt[i] {
			args = append(args, a.ints[i])
		} else {
			args = append(args, a.strs[i])
		}
	}
	return keys, args
}

// EvalInts runs s with a through EVALSHA (loading the script with EVAL
// when the server answers NOSCRIPT) and reads its reply, an array of
// integers, into dst[:0]. A server error reply is returned as Error.
func (p *Pool) EvalInts(ctx context.Context, s *Script, a *Args, dst []int64) ([]int64, error) {
	return p.EvalIntsUntil(ctx, time.Time{}, s, a, dst)
}

// EvalIntsUntil is EvalInts that also gives up at deadline (zero: none),
// for callers that hold a deadline rather than a context with one.
func (p *Pool) EvalIntsUntil(ctx context.Context, deadline time.Time, s *Script, a *Args, dst []int64) ([]int64, error) {
	err := p.evalsha(ctx, deadline, s, func(c *Conn, cmd, script string, deadline time.Time) error {
		var err error
		dst, err = c.eval(cmd, script, a, dst, deadline)
		return err
	})
	return dst, err
}

// EvalIntsWait is EvalIntsUntil followed, in the same write and on the
// same connection, by WAIT replicas timeout: it also returns how many
// replicas acknowledged the script's writes (and every earlier write on
// that connection) within timeout. The script's reply stands whatever
// WAIT says; deadline must leave WAIT its timeout.
func (p *Pool) EvalIntsWait(ctx context.Context, deadline time.Time, s *Script, a *Args, dst []int64, replicas int, timeout time.Duration) ([]int64, int64, error) {
	var acked int64
	err := p.evalsha(ctx, deadline, s, func(c *Conn, cmd, script string, deadline time.Time) error {
		var err error
		dst, acked, err = c.evalWait(cmd, script, a, dst, replicas, timeout, deadline)
		return err
	})
	return dst, acked, err
}

// Eval runs s with keys and args through EVALSHA (EVAL when the server
// answers NOSCRIPT), until deadline (zero: none), and returns its reply as
// go-redis does over RESP2: int64, string, nil, []any, and an error reply
// as Error (the returned error at the top, an element inside an array).
// It takes any script and reply, for users' own limiters.
func (p *Pool) Eval(ctx context.Context, deadline time.Time, s *Script, keys, args []string) (any, error) {
	var reply any
	err := p.evalsha(ctx, deadline, s, func(c *Conn, cmd, script string, deadline time.Time) error {
		c.begin(3 + len(keys) + len(args))
		c.arg(cmd)
		c.arg(script)
		c.intArg(int64(len(keys)))
		for _, k := range keys {
			c.arg(k)
		}
		for _, a := range args {
			c.arg(a)
		}
		if err := c.flush(deadline); err != nil {
			return err
		}
		var err error
		reply, err = c.readAny(0)
		return err
	})
	return reply, err
}

// Do sends cmds in one write, until deadline (zero: none), and reads one
// reply per command, each as Eval returns it, an error reply as Error in
// its place. err is for the exchange itself (I/O, protocol). A READONLY
// reply retires the connection, as for scripts.
func (p *Pool) Do(ctx context.Context, deadline time.Time, cmds ...[]string) ([]any, error) {
	deadline = p.until(ctx, deadline)
	var out []any
	err := p.exchange(ctx, deadline, func(c *Conn) error {
		c.buf = c.buf[:0]
		for _, cmd := range cmds {
			c.more(len(cmd))
			for _, a := range cmd {
				c.arg(a)
			}
		}
		if err := c.flush(deadline); err != nil {
			return err
		}
		out = make([]any, len(cmds))
		for i := range cmds {
			v, err := c.readAny(0)
			var re Error
			switch {
			case errors.As(err, &re):
				out[i] = re
				if strings.HasPrefix(string(re), "READONLY") {
					c.bad = true
				}
			case err != nil:
				return err
			default:
				out[i] = v
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// until is the earlier of deadline (zero: none) and ctx's own, or the
// pool's timeout from now when neither is set.
func (p *Pool) until(ctx context.Context, deadline time.Time) time.Time {
	if d := p.deadline(ctx); deadline.IsZero() || (!d.IsZero() && d.Before(deadline)) {
		return d
	}
	return deadline
}

// evalsha runs send on a borrowed connection with EVALSHA, then with EVAL
// when the server does not know the script yet. A READONLY answer (a
// failover demoted this server) retires the connection, so the next one
// dials the current primary (a Sentinel dialer resolves it again).
func (p *Pool) evalsha(ctx context.Context, deadline time.Time, s *Script, send func(c *Conn, cmd, script string, deadline time.Time) error) error {
	deadline = p.until(ctx, deadline)
	return p.exchange(ctx, deadline, func(c *Conn) error {
		err := send(c, "EVALSHA", s.sha, deadline)
		if err == nil {
			return nil
		}
		var re Error
		if errors.As(err, &re) && strings.HasPrefix(string(re), "NOSCRIPT") {
			err = send(c, "EVAL", s.src, deadline)
		}
		if errors.As(err, &re) && strings.HasPrefix(string(re), "READONLY") {
			c.bad = true
		}
		return err
	})
}

// evalArgs starts the buffer with one EVAL or EVALSHA of a.
func (c *Conn) evalArgs(cmd, script string, a *Args) {
	c.begin(3 + a.n)
	c.arg(cmd)
	c.arg(script)
	c.intArg(int64(a.keys))
	for i := 0; i < a.n; i++ {
		if a.isInt[i] {
			c.intArg(a.ints[i])
		} else {
			c.arg(a.strs[i])
		}
	}
}

func (c *Conn) eval(cmd, script string, a *Args, dst []int64, deadline time.Time) ([]int64, error) {
	c.evalArgs(cmd, script, a)
	if err := c.flush(deadline); err != nil {
		return dst, err
	}
	return c.readInts(dst)
}

// evalWait is eval with WAIT replicas timeout in the same write, so the
// server runs WAIT right after the script, on the same connection (WAIT
// cannot run inside a script). The WAIT reply is read whatever the
// script's, so the connection stays in step.
func (c *Conn) evalWait(cmd, script string, a *Args, dst []int64, replicas int, timeout time.Duration, deadline time.Time) ([]int64, int64, error) {
	c.evalArgs(cmd, script, a)
	c.more(3)
	c.arg("WAIT")
	c.intArg(int64(replicas))
	c.intArg(timeout.Milliseconds())
	if err := c.flush(deadline); err != nil {
		return dst, 0, err
	}
	dst, err := c.readInts(dst)
	if c.bad {
		return dst, 0, err
	}
	v, werr := c.readAny(0)
	if err != nil {
		return dst, 0, err
	}
	if werr != nil {
		return dst, 0, fmt.Errorf("WAIT: %w", werr)
	}
	acked, ok := v.(int64)
	if !ok {
		c.bad = true
		return dst, 0, fmt.Errorf("%w: WAIT answered %v, want an integer", ErrProtocol, v)
	}
	return dst, acked, nil
}
