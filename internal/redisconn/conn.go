package redisconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/rlctl/rlctl/internal/exitcode"
)

// DefaultTimeout bounds dialing and every command when Options.Timeout is
// zero.
const DefaultTimeout = 5 * time.Second

// dialRetries is how often go-redis retries a failed dial (its default, 5
// with 100ms pauses, lets the timeout expire first, so the user would see
// "timed out" instead of "connection refused" or the TLS error).
const dialRetries = 1

// clusterReload is how often a Cluster client re-reads the slot map on its
// own. go-redis re-reads it at once on MOVED or READONLY, which a graceful
// failover produces, but a killed primary answers nothing: its slots stay
// pointed at the dead node until the periodic reload, 60s by default.
const clusterReload = time.Second

// Options are the connection settings from the command line.
type Options struct {
	URL           string
	TLSCA         string
	TLSCert       string
	TLSKey        string
	TLSSkipVerify bool
	// Timeout bounds dialing and every command; zero means DefaultTimeout.
	Timeout time.Duration
	// Getenv reads the environment (REDISCLI_AUTH); nil means none.
	Getenv func(string) string
}

// Config is a parsed, validated connection target. NewClient may be called
// many times: each call returns a client with its own pool.
type Config struct {
	opts    Options
	target  *Target
	tls     *tls.Config
	timeout time.Duration
	// label replaces the URL in String for servers rlctl runs itself
	// ("embedded"), whose random port means nothing to the user.
	label string
	// spawned is the deployment Open started for this config, if any.
	spawned *Deployment
	// dial, when set, opens every connection of the clients this config
	// makes (TLS goes on top of it); see WithDialer.
	dial Dialer
}

// Dialer opens a network connection to addr, as go-redis's Options.Dialer.
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// WithDialer returns a copy of c whose clients (data nodes, Sentinels,
// Cluster nodes alike) open every connection with dial, TLS layered on
// top when the URL asks for it: a fault switch put between rlctl's own
// clients and Redis, say.
func (c *Config) WithDialer(dial Dialer) *Config {
	d := *c
	d.dial = dial
	return &d
}

// dialer is the Options.Dialer of c's clients: nil (go-redis's own) unless
// WithDialer set one.
func (c *Config) dialer() Dialer {
	if c.dial == nil {
		return nil
	}
	dial, tlsCfg := c.dial, c.tls
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil || tlsCfg == nil {
			return nc, err
		}
		cfg := tlsCfg.Clone()
		if cfg.ServerName == "" {
			// As tls.Dial does: the name to verify is the address's host.
			if host, _, err := net.SplitHostPort(addr); err == nil {
				cfg.ServerName = host
			}
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		return tc, nil
	}
}

// Parse validates opts.URL and the TLS settings. When the URL carries no
// password, REDISCLI_AUTH (read through opts.Getenv) supplies it, as
// redis-cli does. Errors never contain the password.
func Parse(opts Options) (*Config, error) {
	t, err := ParseURL(opts.URL)
	if err != nil {
		return nil, exitcode.With(err, exitcode.Usage)
	}
	if !t.PasswordSet && opts.Getenv != nil {
		if pw := opts.Getenv("REDISCLI_AUTH"); pw != "" {
			t.Password, t.PasswordSet = pw, true
		}
	}
	c := &Config{opts: opts, target: t, timeout: opts.Timeout}
	if t.Timeout > 0 {
		c.timeout = t.Timeout
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	tlsUsed := opts.TLSCA != "" || opts.TLSCert != "" || opts.TLSKey != "" || opts.TLSSkipVerify
	if tlsUsed && !t.TLS {
		return nil, exitcode.Errorf(exitcode.Usage, "redis URL %s: --tls-* flags need a rediss:// URL", c)
	}
	if t.TLS {
		if c.tls, err = ClientTLS(opts); err != nil {
			return nil, exitcode.With(fmt.Errorf("redis URL %s: %w", c, err), exitcode.Usage)
		}
	}
	return c, nil
}

// ClientTLS builds the client TLS settings from the --tls-* flags.
func ClientTLS(opts Options) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: opts.TLSSkipVerify} //nolint:gosec // only on explicit request
	if opts.TLSCA != "" {
		pem, err := os.ReadFile(opts.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("read --tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate found", opts.TLSCA)
		}
		cfg.RootCAs = pool
	}
	if (opts.TLSCert == "") != (opts.TLSKey == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	if opts.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(opts.TLSCert, opts.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("load client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Mode reports whether the URL names one server, a Sentinel set or a
// Cluster.
func (c *Config) Mode() Mode { return c.target.Mode }

// Target returns the parsed URL. Callers must not modify it.
func (c *Config) Target() *Target { return c.target }

// Timeout is the connect and command timeout in effect.
func (c *Config) Timeout() time.Duration { return c.timeout }

// String is the redacted URL (or "embedded" for the embedded server).
func (c *Config) String() string {
	if c.label != "" {
		return c.label
	}
	return c.target.URL()
}

// NewClient returns a new client with its own connection pool: a
// *redis.Client, a Sentinel failover client or a *redis.ClusterClient
// depending on Mode.
func (c *Config) NewClient() redis.UniversalClient {
	t := *c.target
	if t.Protocol == 0 {
		// RESP2 unless the URL asks for 3: rlctl uses no push messages, and
		// under RESP3 go-redis polls the socket for them before every
		// command, a measurable cost on the decision path (make bench).
		t.Protocol = 2
	}
	maint := &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	var tlsCfg *tls.Config
	if c.tls != nil {
		tlsCfg = c.tls.Clone()
	}
	switch t.Mode {
	case ModeCluster:
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: t.Addrs, Username: t.Username, Password: t.Password,
			ClientName: t.ClientName, Protocol: t.Protocol, PoolSize: t.PoolSize,
			DialTimeout: c.timeout, ReadTimeout: c.timeout, WriteTimeout: c.timeout,
			ContextTimeoutEnabled: true, TLSConfig: tlsCfg, DialerRetries: dialRetries,
			DisableIdentity: true, MaintNotificationsConfig: maint,
			ClusterStateReloadInterval: clusterReload, Dialer: c.dialer(),
		})
	case ModeSentinel:
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: t.MasterName, SentinelAddrs: t.Addrs,
			SentinelUsername: t.SentinelUsername, SentinelPassword: t.SentinelPassword,
			Username: t.Username, Password: t.Password, DB: t.DB,
			ClientName: t.ClientName, Protocol: t.Protocol, PoolSize: t.PoolSize,
			DialTimeout: c.timeout, ReadTimeout: c.timeout, WriteTimeout: c.timeout,
			ContextTimeoutEnabled: true, TLSConfig: tlsCfg, DialerRetries: dialRetries,
			DisableIdentity: true, Dialer: c.dialer(),
		})
	default:
		return redis.NewClient(&redis.Options{
			Network: t.Network, Addr: t.Addrs[0], Username: t.Username, Password: t.Password, DB: t.DB,
			ClientName: t.ClientName, Protocol: t.Protocol, PoolSize: t.PoolSize,
			DialTimeout: c.timeout, ReadTimeout: c.timeout, WriteTimeout: c.timeout,
			ContextTimeoutEnabled: true, TLSConfig: tlsCfg, DialerRetries: dialRetries,
			DisableIdentity: true, MaintNotificationsConfig: maint, Dialer: c.dialer(),
		})
	}
}

// Connect returns a new client that has answered PING within the timeout,
// or an error carrying exitcode.Unreachable (see Check).
func (c *Config) Connect(ctx context.Context) (redis.UniversalClient, error) {
	client := c.NewClient()
	if err := c.Check(ctx, client); err != nil {
		client.Close()
		return nil, err
	}
	return client, nil
}

// Check sends PING through client, bounded by the configured timeout. A
// failure comes back as one line naming the redacted URL and what failed
// (connection refused, timeout, authentication), carrying
// exitcode.Unreachable. For a Cluster every primary must answer.
func (c *Config) Check(ctx context.Context, client redis.UniversalClient) error {
	return c.Within(ctx, "ping", func(ctx context.Context) error {
		if cc, ok := client.(*redis.ClusterClient); ok {
			return cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
				if err := m.Ping(ctx).Err(); err != nil {
					return fmt.Errorf("%s: %w", m.Options().Addr, err)
				}
				return nil
			})
		}
		return client.Ping(ctx).Err()
	})
}

// Within runs fn with a context bounded by the configured timeout and
// returns as soon as ctx is cancelled, even while fn is still blocked in
// a socket read (go-redis only honours deadlines, not cancellation, once a
// command is on the wire); fn keeps running until its own deadline then.
// An error is described by ConnError with what, all within the timeout: a
// call still running halfway through it is diagnosed (see diagnose) beside
// it, by the same deadline, so a silent server costs the timeout once.
func (c *Config) Within(ctx context.Context, what string, fn func(context.Context) error) error {
	deadline := time.Now().Add(c.timeout)
	cctx, cancel := context.WithDeadline(ctx, deadline)
	errc := make(chan error, 1)
	go func() {
		defer cancel()
		errc <- fn(cctx)
	}()
	diag := make(chan error, 1)
	early := time.AfterFunc(c.timeout/2, func() { diag <- c.diagnose(deadline) })
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil {
		early.Stop()
		return nil
	}
	if early.Stop() {
		// fn failed before halfway: a direct attempt has the rest of the
		// timeout, if the error needs one.
		return c.connError(ctx, what, err, func() error { return c.diagnose(deadline) })
	}
	return c.connError(ctx, what, err, func() error { return <-diag })
}

// ConnError describes a failed Redis call as one line, "redis URL: what
// failed: cause", with every password removed, and attaches
// exitcode.Unreachable. Interruption (a cancelled parent context) is kept
// as such so the caller can report it.
func (c *Config) ConnError(ctx context.Context, what string, err error) error {
	return c.connError(ctx, what, err, func() error { return c.diagnose(time.Now().Add(min(c.timeout, time.Second))) })
}

// connError is ConnError with the direct attempt to make when go-redis's
// error may hide the cause.
func (c *Config) connError(ctx context.Context, what string, err error, diagnose func() error) error {
	if errors.Is(err, context.Canceled) && ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return fmt.Errorf("redis %s: %s: %w", c, what, err)
	}
	if strings.Contains(err.Error(), "DB index is out of range") {
		// The URL names a database the server does not have: bad input.
		return exitcode.With(fmt.Errorf("redis %s: %s: database %d does not exist on this server (see its databases setting): %w", c, what, c.target.DB, c.RedactError(err)), exitcode.Usage)
	}
	// With Sentinel, go-redis's message depends on timing: sometimes the
	// bare "all sentinels ... unreachable", sometimes with one cause
	// appended; asking each Sentinel says the same every time.
	sentinel := c.target.Mode == ModeSentinel && strings.Contains(err.Error(), "sentinel")
	if k := Classify(err); (k == "timed out" || k == "sentinel lookup failed" || sentinel) && !socketTimeout(err) {
		// go-redis retries may use up the deadline and hide the cause
		// (refused, untrusted certificate); one direct attempt finds it.
		if cause := diagnose(); cause != nil {
			err = cause
		}
	}
	return exitcode.With(fmt.Errorf("redis %s: %s: %s: %w", c, what, Classify(err), c.RedactError(err)), exitcode.Unreachable)
}

// socketTimeout reports whether err is a dial, read or write that timed
// out: the cause is then known (nothing answered in time), and a direct
// attempt would only wait as long again.
func socketTimeout(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Timeout()
}

// diagnose dials the first address once (with the TLS handshake when
// configured), giving up at deadline, and returns what went wrong, or nil
// if that much works or no time is left to try.
func (c *Config) diagnose(deadline time.Time) error {
	t := c.target
	if len(t.Addrs) == 0 || time.Until(deadline) <= 0 {
		return nil
	}
	if t.Mode == ModeSentinel {
		return c.diagnoseSentinels(deadline)
	}
	d := net.Dialer{Deadline: deadline}
	conn, err := d.Dial(t.Network, t.Addrs[0])
	if err != nil {
		return err
	}
	defer conn.Close()
	if c.tls == nil {
		return nil
	}
	cfg := c.tls.Clone()
	if cfg.ServerName == "" {
		if host, _, err := net.SplitHostPort(t.Addrs[0]); err == nil {
			cfg.ServerName = host
		}
	}
	tc := tls.Client(conn, cfg)
	_ = tc.SetDeadline(deadline)
	return tc.Handshake()
}

// classOOM is Classify's name for Redis refusing a write for lack of memory.
const classOOM = "out of memory (OOM: maxmemory reached, writes refused)"

// Classify names the kind of a connection failure in a few words.
func Classify(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "WRONGPASS"), strings.Contains(msg, "NOAUTH"),
		strings.Contains(msg, "invalid password"), strings.Contains(msg, "invalid username-password"),
		strings.Contains(msg, "AUTH <password> called without any password"):
		return "authentication failed"
	case strings.Contains(msg, "NOPERM"), strings.Contains(msg, "can't access at least one of the keys"):
		return "permission denied"
	case IsOOM(err):
		return classOOM
	case strings.Contains(msg, "connection refused"):
		return "connection refused"
	case strings.Contains(msg, "no such file or directory"):
		return "no such socket"
	case errors.Is(err, context.DeadlineExceeded), strings.Contains(msg, "i/o timeout"), strings.Contains(msg, "timeout"):
		return "timed out"
	case strings.Contains(msg, "certificate"), strings.Contains(msg, "tls:"):
		return "TLS handshake failed"
	case strings.Contains(msg, "all sentinels are unreachable"), strings.Contains(msg, "sentinel"):
		return "sentinel lookup failed"
	case strings.Contains(msg, "no such host"):
		return "unknown host"
	case strings.Contains(msg, "redis: can't parse"), strings.Contains(msg, "redis: invalid reply"):
		// Something else listens there (an HTTP gateway's port, say):
		// its answer, which go-redis quotes, says what.
		return "not a Redis server"
	default:
		return "failed"
	}
}

// RedactError returns err with every secret this Config knows (URL
// password, REDISCLI_AUTH, sentinel password) replaced by "xxxxx" in its
// message, still unwrapping to err. go-redis does not put passwords in its
// errors today; this keeps it that way if a dependency ever does.
func (c *Config) RedactError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := c.RedactText(msg)
	if clean == msg {
		return err
	}
	return &redactedError{msg: clean, err: err}
}

// RedactText removes this Config's secrets and any URL password from s.
func (c *Config) RedactText(s string) string {
	for _, secret := range []string{c.target.Password, c.target.SentinelPassword} {
		s = redactSecret(s, secret)
	}
	return s
}

// shortSecret is the length below which a secret is replaced only where it
// stands alone: a password "p" replaced inside "tcp" would both garble the
// message and show, by its holes, what the password is.
const shortSecret = 8

// redactSecret replaces secret in s: everywhere when it is long, else
// only where no letter or digit touches it.
func redactSecret(s, secret string) string {
	if secret == "" {
		return s
	}
	if len(secret) >= shortSecret {
		return strings.ReplaceAll(s, secret, redactedPassword)
	}
	word := func(i int) bool {
		if i < 0 || i >= len(s) {
			return false
		}
		b := s[i]
		return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
	}
	var b strings.Builder
	from := 0 // s[:from] is written
	for at := 0; ; {
		i := strings.Index(s[at:], secret)
		if i < 0 {
			b.WriteString(s[from:])
			return b.String()
		}
		i += at
		end := i + len(secret)
		if !word(i-1) && !word(end) {
			b.WriteString(s[from:i])
			b.WriteString(redactedPassword)
			from = end
		}
		at = end
	}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// diagnoseSentinels asks each Sentinel for the master, giving up at
// deadline, and explains why none gave an address: go-redis reports every
// failure, even an unknown master name, as "all sentinels are unreachable".
func (c *Config) diagnoseSentinels(deadline time.Time) error {
	t := c.target
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var errs []string
	for _, a := range t.Addrs {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		s := redis.NewSentinelClient(&redis.Options{Addr: a, Username: t.SentinelUsername, Password: t.SentinelPassword,
			DialTimeout: left, ReadTimeout: left, WriteTimeout: left, MaxRetries: -1, DialerRetries: dialRetries, DisableIdentity: true, Protocol: 2})
		addr, err := s.GetMasterAddrByName(ctx, t.MasterName).Result()
		s.Close()
		switch {
		case errors.Is(err, redis.Nil):
			errs = append(errs, fmt.Sprintf("sentinel %s does not know master %q", a, t.MasterName))
		case err != nil:
			errs = append(errs, fmt.Sprintf("sentinel %s: %v", a, err))
		case len(addr) == 2:
			return nil // a Sentinel answers; the failure was elsewhere
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(errs, "; "))
}

// InfoField returns the value of name in an INFO reply ("role" in
// "role:master"), or "" when the reply has no such field.
func InfoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}
