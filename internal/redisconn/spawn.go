package redisconn

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// SpawnOptions say which deployment of real redis-server processes Spawn
// starts. The zero value is one standalone server.
type SpawnOptions struct {
	// Replicas is the number of replicas of the primary (not with Cluster).
	Replicas int
	// Sentinels, when > 0, adds that many Sentinels monitoring the primary;
	// the deployment's URL is then a redis+sentinel:// URL.
	Sentinels int
	// MasterName is the Sentinel master name; default "mymaster".
	MasterName string
	// Monitor, with Sentinels, is the host:port of an existing primary for
	// the Sentinels to watch; no data node is started then.
	Monitor string
	// Cluster starts a Cluster of Masters primaries (default 3) with the
	// 16384 slots split evenly, instead of a primary with replicas.
	Cluster bool
	Masters int
	// ClusterReplicas, with Cluster, gives each master that many replicas.
	ClusterReplicas int
	// Username and Password protect every data node: with only Password the
	// default user needs it (requirepass); with Username an ACL user of
	// that name gets all permissions and the default user is disabled.
	// Replicas and Sentinels are configured to authenticate.
	Username string
	Password string
	// TLS, when set, makes the data nodes serve TLS only (no plain port).
	// Not with Cluster or Sentinels.
	TLS *SpawnTLS
	// Args are extra redis-server config directives for every data node,
	// e.g. {"--maxmemory", "10mb"}.
	Args []string
	// Dir is the parent of the deployment's directory; default os.TempDir().
	Dir string
	// Binary is the redis-server to run; default "redis-server" from PATH.
	Binary string
	// StartTimeout bounds the whole start-up; default 15s.
	StartTimeout time.Duration
	// ReplPassword is ReplUser's password; default random. A deployment
	// whose servers replicate another deployment's (--replicaof in Args)
	// takes that one's ReplPassword().
	ReplPassword string
}

// SpawnTLS are the files a TLS-only server uses.
type SpawnTLS struct {
	CertFile string // server certificate (PEM)
	KeyFile  string // its private key
	CAFile   string // the CA that signed it (and client certificates)
	// AuthClients makes the server require a client certificate signed by
	// CAFile; clients then use CertFile/KeyFile as theirs.
	AuthClients bool
}

// Role says what a spawned process is.
type Role string

// The roles of spawned processes.
const (
	RolePrimary  Role = "primary"
	RoleReplica  Role = "replica"
	RoleSentinel Role = "sentinel"
	RoleMaster   Role = "cluster-master"
	RoleCReplica Role = "cluster-replica"
)

// Process is one spawned redis-server (or Sentinel) process.
type Process struct {
	Role Role
	Addr string // 127.0.0.1:port
	Port int
	// BusPort is the Cluster bus port (Cluster only).
	BusPort int
	Dir     string // its own directory: config, pid file, log
	Pid     int

	cmd    *exec.Cmd
	exited chan struct{}
}

// LogFile is the path of the process's log.
func (p *Process) LogFile() string { return filepath.Join(p.Dir, "redis.log") }

// Alive reports whether the process is still running.
func (p *Process) Alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill ends the process group with SIGKILL and waits for the process.
func (p *Process) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	if !p.Alive() {
		// Already reaped: its pid (and group id) may belong to someone
		// else by now.
		return
	}
	// The process leads its own group (procAttr), so this reaches it and
	// anything it forked.
	killGroup(p.cmd.Process.Pid)
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// Deployment is a set of running redis-server processes started by Spawn.
// Close stops them all; so does cancelling the context given to Spawn, and
// so does rlctl's own death (each child gets SIGKILL when its parent dies).
type Deployment struct {
	// Dir holds one directory per process; removed by Close.
	Dir string
	// Servers are the data nodes: the primary first, then its replicas; or
	// the Cluster masters, then their replicas.
	Servers []*Process
	// Sentinels are the Sentinel processes, if any.
	Sentinels []*Process
	// MasterName is the Sentinel master name (with Sentinels).
	MasterName string

	opts SpawnOptions
	tls  *tls.Config
	// replPass is ReplUser's password, random per deployment.
	replPass string
	mu       sync.Mutex
	primary  int
	closed   bool
	stop     context.CancelFunc
	// owner holds Dir's owner lock while the deployment lives (see
	// lockOwner); nil where the platform has none.
	owner     *os.File
	closeOnce sync.Once
	closeErr  error
}

// Spawn starts the deployment opts describes on free loopback ports and
// waits until it is ready (replicas in sync, Cluster slots covered,
// Sentinels watching). On any error everything started is stopped.
func Spawn(ctx context.Context, opts SpawnOptions) (*Deployment, error) {
	if opts.Cluster && (opts.Replicas > 0 || opts.Sentinels > 0) {
		return nil, errors.New("spawn: a Cluster is started without replicas or Sentinels")
	}
	if opts.TLS != nil && (opts.Cluster || opts.Sentinels > 0) {
		return nil, errors.New("spawn: TLS is supported for standalone servers and replicas only")
	}
	if opts.ClusterReplicas > 0 && !opts.Cluster {
		return nil, errors.New("spawn: cluster replicas need Cluster")
	}
	if opts.Replicas < 0 || opts.Sentinels < 0 || opts.Masters < 0 || opts.ClusterReplicas < 0 {
		return nil, errors.New("spawn: negative count")
	}
	if opts.Cluster && opts.Masters == 0 {
		opts.Masters = 3
	}
	if opts.MasterName == "" {
		opts.MasterName = "mymaster"
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 15 * time.Second
	}
	if opts.Binary == "" {
		bin, err := exec.LookPath("redis-server")
		if err != nil {
			return nil, fmt.Errorf("spawn: redis-server not found on PATH (install it, e.g. apt-get install redis-server, or use redis: embedded): %w", err)
		}
		opts.Binary = bin
	}
	// What an rlctl killed outright left behind when its reaper could not
	// start (see startReaper): its servers died with it (on Linux), their
	// directories did not.
	sweepStale(opts.Dir)
	dir, err := os.MkdirTemp(opts.Dir, spawnDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("spawn: make directory: %w", err)
	}
	owner, err := lockOwner(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("spawn: %w", err)
	}
	if owner != nil {
		startReaper(dir)
	}
	d := &Deployment{Dir: dir, opts: opts, replPass: opts.ReplPassword, owner: owner}
	if d.replPass == "" {
		d.replPass = randomHex(16)
	}
	if opts.Sentinels > 0 {
		d.MasterName = opts.MasterName
	}
	if opts.TLS != nil {
		to := Options{TLSCA: opts.TLS.CAFile}
		if opts.TLS.AuthClients {
			to.TLSCert, to.TLSKey = opts.TLS.CertFile, opts.TLS.KeyFile
		}
		if d.tls, err = ClientTLS(to); err != nil {
			d.Close()
			return nil, fmt.Errorf("spawn: %w", err)
		}
	}

	// Everything started dies with ctx, also after Spawn returned.
	life, stop := context.WithCancel(context.WithoutCancel(ctx))
	d.stop = stop
	go func() {
		select {
		case <-ctx.Done():
			d.Close()
		case <-life.Done():
		}
	}()

	startCtx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := d.start(startCtx); err != nil {
		d.Close()
		return nil, fmt.Errorf("spawn redis-server: %w", err)
	}
	return d, nil
}

func (d *Deployment) start(ctx context.Context) error {
	o := d.opts
	if o.Cluster {
		for i := 0; i < o.Masters; i++ {
			if _, err := d.startServer(ctx, RoleMaster, fmt.Sprintf("master%d", i), nil); err != nil {
				return err
			}
		}
		if err := d.formCluster(ctx); err != nil {
			return err
		}
		return d.addClusterReplicas(ctx)
	}
	if o.Monitor != "" {
		host, port, err := net.SplitHostPort(o.Monitor)
		if err != nil {
			return fmt.Errorf("monitor %q: %w", o.Monitor, err)
		}
		for i := 0; i < o.Sentinels; i++ {
			if err := d.startSentinel(ctx, i, host, port); err != nil {
				return err
			}
		}
		return nil
	}
	primary, err := d.startServer(ctx, RolePrimary, "primary", nil)
	if err != nil {
		return err
	}
	for i := 0; i < o.Replicas; i++ {
		if _, err := d.startServer(ctx, RoleReplica, fmt.Sprintf("replica%d", i), primary); err != nil {
			return err
		}
	}
	for i := 1; i < len(d.Servers); i++ {
		if err := d.waitInSync(ctx, d.Servers[i]); err != nil {
			return err
		}
	}
	if err := d.waitAcked(ctx, primary, o.Replicas); err != nil {
		return err
	}
	for i := 0; i < o.Sentinels; i++ {
		if err := d.startSentinel(ctx, i, "127.0.0.1", strconv.Itoa(primary.Port)); err != nil {
			return err
		}
	}
	if o.Sentinels > 0 {
		return d.waitSentinelsReady(ctx)
	}
	return nil
}

// waitSentinelsReady waits until every Sentinel knows every replica and
// every other Sentinel: before that a failover is refused (NOGOODSLAVE) or
// no leader can be elected.
func (d *Deployment) waitSentinelsReady(ctx context.Context) error {
	for _, s := range d.Sentinels {
		c := d.client(s)
		defer c.Close()
		for {
			m, err := c.Do(ctx, "SENTINEL", "MASTER", d.MasterName).Result()
			if err == nil && sentinelField(m, "num-slaves") == strconv.Itoa(d.opts.Replicas) &&
				sentinelField(m, "num-other-sentinels") == strconv.Itoa(len(d.Sentinels)-1) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("sentinel %s never saw the whole deployment: %v", s.Addr, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// sentinelField reads one field of a SENTINEL MASTER reply (a flat list of
// names and values under RESP2, a map under RESP3).
func sentinelField(reply any, name string) string {
	switch r := reply.(type) {
	case []any:
		for i := 0; i+1 < len(r); i += 2 {
			if fmt.Sprint(r[i]) == name {
				return fmt.Sprint(r[i+1])
			}
		}
	case map[any]any:
		if v, ok := r[name]; ok {
			return fmt.Sprint(v)
		}
	}
	return ""
}

// serverArgs are the directives for a data node on port in dir.
func (d *Deployment) serverArgs(p *Process, replicaOf *Process) []string {
	o := d.opts
	args := []string{
		"--bind", "127.0.0.1", "--dir", p.Dir, "--save", "", "--appendonly", "no",
		"--pidfile", filepath.Join(p.Dir, "redis.pid"), "--logfile", p.LogFile(),
		"--daemonize", "no",
		// Replicas sync at once instead of after the default 5s pause.
		"--repl-diskless-sync-delay", "0",
	}
	if o.TLS != nil {
		auth := "no"
		if o.TLS.AuthClients {
			auth = "yes"
		}
		args = append(args, "--port", "0", "--tls-port", strconv.Itoa(p.Port),
			"--tls-cert-file", o.TLS.CertFile, "--tls-key-file", o.TLS.KeyFile,
			"--tls-ca-cert-file", o.TLS.CAFile, "--tls-auth-clients", auth, "--tls-replication", "yes")
	} else {
		args = append(args, "--port", strconv.Itoa(p.Port))
	}
	if p.Role == RoleMaster || p.Role == RoleCReplica {
		// A 1s node timeout: a dead master is noticed, and its replica
		// elected, within about two seconds.
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(p.Dir, "nodes.conf"),
			"--cluster-port", strconv.Itoa(p.BusPort), "--cluster-node-timeout", "1000")
	}
	if replicaOf != nil {
		args = append(args, "--replicaof", "127.0.0.1", strconv.Itoa(replicaOf.Port))
	}
	return append(args, o.Args...)
}

// ReplPassword is the password of the deployment's replication user.
func (d *Deployment) ReplPassword() string { return d.replPass }

// ReplUser is the user every spawned data node's replicas authenticate
// as, apart from the clients' user, so replication alone can be held back
// (HoldReplication) while clients go on.
const ReplUser = "rlctl-repl"

// writeAuthConf writes the credential directives of a data node into
// dir/auth.conf and returns its path: the clients' credentials, if any,
// and the replication user with the deployment's own random password.
func (d *Deployment) writeAuthConf(dir string) (string, error) {
	o := d.opts
	var b strings.Builder
	if o.Username != "" && o.Username != "default" {
		fmt.Fprintf(&b, "user %s on %s ~* &* +@all\nuser default off\n", confQuote(o.Username), confQuote(">"+o.Password))
	} else if o.Password != "" {
		fmt.Fprintf(&b, "requirepass %s\n", confQuote(o.Password))
	}
	fmt.Fprintf(&b, "user %s on %s +@all\nmasteruser %s\nmasterauth %s\n",
		ReplUser, confQuote(">"+d.replPass), ReplUser, confQuote(d.replPass))
	path := filepath.Join(dir, "auth.conf")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

// confQuote quotes s as one redis.conf argument: a double-quoted string
// where anything but printable ASCII is written \xHH, which redis.conf
// understands.
func confQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c < 0x7f && c != '"' && c != '\\' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "\\x%02x", c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// startServer starts one data node, retrying on another port when the
// free port it picked was taken in the meantime.
func (d *Deployment) startServer(ctx context.Context, role Role, name string, replicaOf *Process) (*Process, error) {
	pdir := filepath.Join(d.Dir, name)
	if err := os.MkdirAll(pdir, 0o700); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p, err := d.onFreePorts(ctx, func() (*Process, error) {
		p := &Process{Role: role, Dir: pdir}
		var err error
		if p.Port, err = freePort(); err != nil {
			return nil, err
		}
		if role == RoleMaster || role == RoleCReplica {
			if p.BusPort, err = freePort(); err != nil {
				return nil, err
			}
		}
		p.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Port))
		os.Remove(p.LogFile())
		args := d.serverArgs(p, replicaOf)
		// Credentials go in a 0600 file, not on the command line where ps
		// would show them.
		conf, err := d.writeAuthConf(pdir)
		if err != nil {
			return nil, err
		}
		args = append([]string{conf}, args...)
		if err := d.run(p, d.opts.Binary, args...); err != nil {
			return nil, err
		}
		err = d.waitReady(ctx, p, false)
		// Read once at start, the credentials need not stay on disk.
		os.Remove(conf)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

// onFreePorts starts one process with start, which picks free ports for
// it: again on other ports, five times in all, when the process could not
// bind one (another process took it after it was picked). start returns
// the process it started with the error that kept it from becoming
// ready, or no process when it could not start one; a process that did
// not become ready is killed and forgotten.
func (d *Deployment) onFreePorts(ctx context.Context, start func() (*Process, error)) (*Process, error) {
	for try := 1; ; try++ {
		p, err := start()
		if p == nil || err == nil {
			return p, err
		}
		p.kill()
		d.remove(p)
		if try == 5 || !strings.Contains(readTail(p.LogFile()), "Address already in use") || ctx.Err() != nil {
			return nil, err
		}
	}
}

// run starts the process in its own process group, on Linux with SIGKILL
// as its parent-death signal so it cannot outlive rlctl (see procAttr), and
// records it.
func (d *Deployment) run(p *Process, bin string, args ...string) error {
	cmd := exec.Command(bin, args...)
	cmd.Dir = p.Dir
	cmd.SysProcAttr = procAttr()
	if err := startOnStarterThread(cmd); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	p.cmd, p.Pid, p.exited = cmd, cmd.Process.Pid, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		p.kill()
		return errors.New("deployment closed")
	}
	if p.Role == RoleSentinel {
		d.Sentinels = append(d.Sentinels, p)
	} else {
		d.Servers = append(d.Servers, p)
	}
	return nil
}

func (d *Deployment) remove(p *Process) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, list := range []*[]*Process{&d.Servers, &d.Sentinels} {
		for i, q := range *list {
			if q == p {
				*list = append((*list)[:i], (*list)[i+1:]...)
				return
			}
		}
	}
}

// client returns a plain client for one process, with the deployment's
// credentials and TLS settings (Sentinels take no TLS and no password).
func (d *Deployment) client(p *Process) *redis.Client {
	o := &redis.Options{Addr: p.Addr, DialTimeout: time.Second, ReadTimeout: 2 * time.Second,
		WriteTimeout: 2 * time.Second, MaxRetries: -1, DisableIdentity: true, Protocol: 2}
	if p.Role != RoleSentinel {
		o.Username, o.Password = d.opts.Username, d.opts.Password
		if d.tls != nil {
			o.TLSConfig = d.tls.Clone()
		}
	}
	return redis.NewClient(o)
}

// waitReady polls PING until the process answers, exits, or ctx ends.
func (d *Deployment) waitReady(ctx context.Context, p *Process, sentinel bool) error {
	c := d.client(p)
	defer c.Close()
	var err error
	for {
		if !p.Alive() {
			return fmt.Errorf("%s exited: %s", p.Addr, lastLine(readTail(p.LogFile())))
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		if sentinel {
			err = c.Do(pctx, "SENTINEL", "get-master-addr-by-name", d.opts.MasterName).Err()
		} else {
			err = c.Ping(pctx).Err()
		}
		if err == nil {
			// The port was free when picked; another server may have
			// taken it since, and our process, unable to bind, is about
			// to exit. Only our own process counts as ready.
			err = isOwn(pctx, c, p)
		}
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %v (log: %s)", p.Addr, err, lastLine(readTail(p.LogFile())))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// isOwn checks that the server answering on p's address is p's process,
// by the process id it reports.
func isOwn(ctx context.Context, c redis.UniversalClient, p *Process) error {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return err
	}
	switch v := InfoField(info, "process_id"); v {
	case strconv.Itoa(p.Pid):
		return nil
	case "":
		return fmt.Errorf("%s: INFO server has no process_id", p.Addr)
	default:
		return fmt.Errorf("%s is answered by another server (process %s, ours is %d)", p.Addr, v, p.Pid)
	}
}

// waitInSync waits until a replica's link to its primary is up.
func (d *Deployment) waitInSync(ctx context.Context, p *Process) error {
	c := d.client(p)
	defer c.Close()
	for {
		info, err := c.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("replica %s never synced with its primary: %v", p.Addr, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitAcked waits until n replicas acknowledge a write on the primary p
// (see AckedReplicas): a replica whose link is up acknowledges only after
// its first REPLCONF ACK, up to a second later.
func (d *Deployment) waitAcked(ctx context.Context, p *Process, n int) error {
	if n == 0 {
		return nil
	}
	c := d.client(p)
	defer c.Close()
	for {
		if k, err := AckedReplicas(ctx, c, n, 100*time.Millisecond); err == nil && k >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: its replicas never acknowledged a write: %v", p.Addr, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// formCluster gives each master an even share of the slots, introduces
// them to each other and waits until every node sees a healthy Cluster.
func (d *Deployment) formCluster(ctx context.Context) error {
	n := len(d.Servers)
	clients := make([]*redis.Client, n)
	for i, p := range d.Servers {
		clients[i] = d.client(p)
		defer clients[i].Close()
	}
	for i, c := range clients {
		lo, hi := i*16384/n, (i+1)*16384/n-1
		if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fmt.Errorf("cluster addslotsrange on %s: %w", d.Servers[i].Addr, err)
		}
		// Distinct epochs avoid a round of collision handling.
		if err := c.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fmt.Errorf("cluster set-config-epoch on %s: %w", d.Servers[i].Addr, err)
		}
	}
	for i := 1; i < n; i++ {
		p := d.Servers[i]
		if err := clients[0].Do(ctx, "CLUSTER", "MEET", "127.0.0.1", p.Port, p.BusPort).Err(); err != nil {
			return fmt.Errorf("cluster meet %s: %w", p.Addr, err)
		}
	}
	want := "cluster_known_nodes:" + strconv.Itoa(n)
	for i, c := range clients {
		for {
			info, err := c.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, want) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("cluster never became healthy on %s: %v", d.Servers[i].Addr, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}

// addClusterReplicas starts ClusterReplicas replicas per master, makes each
// replicate its master and waits until they are in sync and every node
// knows every other.
func (d *Deployment) addClusterReplicas(ctx context.Context) error {
	masters := append([]*Process(nil), d.Servers...)
	if d.opts.ClusterReplicas == 0 {
		return nil
	}
	seed := d.client(masters[0])
	defer seed.Close()
	var replicas []*Process
	for i, m := range masters {
		mc := d.client(m)
		id, err := mc.Do(ctx, "CLUSTER", "MYID").Text()
		mc.Close()
		if err != nil {
			return fmt.Errorf("cluster myid on %s: %w", m.Addr, err)
		}
		for j := 0; j < d.opts.ClusterReplicas; j++ {
			r, err := d.startServer(ctx, RoleCReplica, fmt.Sprintf("master%d-replica%d", i, j), nil)
			if err != nil {
				return err
			}
			if err := seed.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", r.Port, r.BusPort).Err(); err != nil {
				return fmt.Errorf("cluster meet %s: %w", r.Addr, err)
			}
			if err := d.untilOK(ctx, r, func(c *redis.Client) error {
				// The replica must know its master before it can follow it.
				return c.Do(ctx, "CLUSTER", "REPLICATE", id).Err()
			}); err != nil {
				return fmt.Errorf("cluster replicate on %s: %w", r.Addr, err)
			}
			replicas = append(replicas, r)
		}
	}
	for _, r := range replicas {
		if err := d.waitInSync(ctx, r); err != nil {
			return err
		}
	}
	for _, m := range masters {
		if err := d.waitAcked(ctx, m, d.opts.ClusterReplicas); err != nil {
			return err
		}
	}
	want := "cluster_known_nodes:" + strconv.Itoa(len(d.Servers))
	for _, p := range d.Servers {
		if err := d.untilOK(ctx, p, func(c *redis.Client) error {
			info, err := c.ClusterInfo(ctx).Result()
			if err == nil && !(strings.Contains(info, "cluster_state:ok") && strings.Contains(info, want)) {
				err = errors.New("not every node known yet")
			}
			return err
		}); err != nil {
			return fmt.Errorf("cluster never became healthy on %s: %w", p.Addr, err)
		}
	}
	return nil
}

// untilOK calls f with a client of p every 20ms until it succeeds or ctx
// ends, and returns its last error then.
func (d *Deployment) untilOK(ctx context.Context, p *Process, f func(*redis.Client) error) error {
	c := d.client(p)
	defer c.Close()
	for {
		err := f(c)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (%v)", err, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (d *Deployment) startSentinel(ctx context.Context, i int, mhost, mport string) error {
	pdir := filepath.Join(d.Dir, fmt.Sprintf("sentinel%d", i))
	if err := os.MkdirAll(pdir, 0o700); err != nil {
		return err
	}
	quorum := d.opts.Sentinels/2 + 1
	_, err := d.onFreePorts(ctx, func() (*Process, error) {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		p := &Process{Role: RoleSentinel, Dir: pdir, Port: port, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
		m := d.opts.MasterName
		conf := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\npidfile %s\n"+
			"sentinel monitor %s %s %s %d\n"+
			"sentinel down-after-milliseconds %s 800\nsentinel failover-timeout %s 3000\n",
			port, pdir, p.LogFile(), filepath.Join(pdir, "redis.pid"), m, mhost, mport, quorum, m, m)
		if d.opts.Password != "" {
			if d.opts.Username != "" && d.opts.Username != "default" {
				conf += fmt.Sprintf("sentinel auth-user %s %s\n", m, confQuote(d.opts.Username))
			}
			conf += fmt.Sprintf("sentinel auth-pass %s %s\n", m, confQuote(d.opts.Password))
		}
		cfgPath := filepath.Join(pdir, "sentinel.conf")
		// 0600: the file may hold the password.
		if err := os.WriteFile(cfgPath, []byte(conf), 0o600); err != nil {
			return nil, err
		}
		os.Remove(p.LogFile())
		if err := d.run(p, d.opts.Binary, cfgPath, "--sentinel"); err != nil {
			return nil, err
		}
		return p, d.waitReady(ctx, p, true)
	})
	if err != nil {
		return fmt.Errorf("sentinel%d: %w", i, err)
	}
	return nil
}

// Mode is the deployment's mode, as its URL names it.
func (d *Deployment) Mode() Mode {
	switch {
	case d.opts.Cluster:
		return ModeCluster
	case d.opts.Sentinels > 0:
		return ModeSentinel
	default:
		return ModeStandalone
	}
}

// userInfo is the user info part of URLs, with the real password: these
// URLs connect, they are not for display (pass them through Redact).
func (d *Deployment) userInfo() string {
	if d.opts.Password == "" {
		return ""
	}
	return escapeUserInfo(d.opts.Username) + ":" + escapeUserInfo(d.opts.Password) + "@"
}

// URL connects to the whole deployment: the primary (redis:// or
// rediss://), the Sentinel set (redis+sentinel://) or the Cluster
// (redis+cluster://). It contains the password, if any: redact before
// showing it.
func (d *Deployment) URL() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch d.Mode() {
	case ModeCluster:
		return "redis+cluster://" + d.userInfo() + joinAddrs(d.Servers)
	case ModeSentinel:
		return "redis+sentinel://" + d.userInfo() + joinAddrs(d.Sentinels) + "/" + url.PathEscape(d.MasterName)
	default:
		return d.serverURL(d.Servers[d.primary])
	}
}

// ServerURL connects to data node i alone (redis:// or rediss://).
func (d *Deployment) ServerURL(i int) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.serverURL(d.Servers[i])
}

func (d *Deployment) serverURL(p *Process) string {
	scheme := "redis://"
	if d.opts.TLS != nil {
		scheme = "rediss://"
	}
	return scheme + d.userInfo() + p.Addr
}

func joinAddrs(ps []*Process) string {
	addrs := make([]string, len(ps))
	for i, p := range ps {
		addrs[i] = p.Addr
	}
	return strings.Join(addrs, ",")
}

// Primary is the index in Servers of the current primary (0 until Promote).
func (d *Deployment) Primary() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.primary
}

// Promote makes replica i the primary (REPLICAOF NO ONE) and points the
// other live replicas at it, as a manual failover does. The old primary is
// left as it is: kill it first (Kill) to simulate a crash, or leave it up
// to see a split brain. Not for Sentinel deployments (use Failover).
func (d *Deployment) Promote(ctx context.Context, i int) error {
	d.mu.Lock()
	if i < 0 || i >= len(d.Servers) || d.opts.Cluster || i == d.primary {
		d.mu.Unlock()
		return fmt.Errorf("promote: server %d is not a replica", i)
	}
	old, servers := d.primary, append([]*Process(nil), d.Servers...)
	d.mu.Unlock()
	np := servers[i]
	c := d.client(np)
	err := c.Do(ctx, "REPLICAOF", "NO", "ONE").Err()
	c.Close()
	if err != nil {
		return fmt.Errorf("promote %s: %w", np.Addr, err)
	}
	for j, p := range servers {
		if j == i || j == old || !p.Alive() {
			continue
		}
		c := d.client(p)
		err := c.Do(ctx, "REPLICAOF", "127.0.0.1", np.Port).Err()
		c.Close()
		if err != nil {
			return fmt.Errorf("point %s at new primary %s: %w", p.Addr, np.Addr, err)
		}
	}
	d.mu.Lock()
	d.primary = i
	d.mu.Unlock()
	return nil
}

// Failover asks the first Sentinel for a failover and waits until it
// reports a new primary address, which it returns, or until ctx ends (so
// bound ctx).
func (d *Deployment) Failover(ctx context.Context) (string, error) {
	if len(d.Sentinels) == 0 {
		return "", errors.New("failover: no Sentinels")
	}
	c := d.client(d.Sentinels[0])
	defer c.Close()
	before, err := c.Do(ctx, "SENTINEL", "get-master-addr-by-name", d.MasterName).StringSlice()
	if err != nil {
		return "", fmt.Errorf("failover: ask sentinel: %w", err)
	}
	// Sentinel answers NOGOODSLAVE until it has seen a recent INFO from
	// the replica (it asks every 10s at first, then every second), so a
	// failover asked right after start waits for that, within ctx.
	for {
		err := c.Do(ctx, "SENTINEL", "FAILOVER", d.MasterName).Err()
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "NOGOODSLAVE") {
			return "", fmt.Errorf("failover: %w", err)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("failover: %w (and still so when %w)", err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	for {
		now, err := c.Do(ctx, "SENTINEL", "get-master-addr-by-name", d.MasterName).StringSlice()
		if err == nil && len(now) == 2 && (now[0] != before[0] || now[1] != before[1]) {
			addr := net.JoinHostPort(now[0], now[1])
			d.mu.Lock()
			for i, p := range d.Servers {
				if p.Addr == addr {
					d.primary = i
				}
			}
			d.mu.Unlock()
			return addr, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("failover: no new primary: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Kill stops data node i at once with SIGKILL, as a crash would.
func (d *Deployment) Kill(i int) error {
	d.mu.Lock()
	if i < 0 || i >= len(d.Servers) {
		d.mu.Unlock()
		return fmt.Errorf("kill: no server %d", i)
	}
	p := d.Servers[i]
	d.mu.Unlock()
	p.kill()
	return nil
}

// KillAddr stops the data node listening on addr at once with SIGKILL, as
// a crash would. Only nodes of this deployment can be killed.
func (d *Deployment) KillAddr(addr string) error {
	p, err := d.serverAt(addr)
	if err != nil {
		return fmt.Errorf("kill: %w", err)
	}
	p.kill()
	return nil
}

// serverAt is the data node listening on addr.
func (d *Deployment) serverAt(addr string) (*Process, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.Servers {
		if p.Addr == addr {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%s is no data node rlctl started", addr)
}

// HoldReplication cuts the replicas of the data node at addr off from it
// and keeps them off: its replication user is disabled and its replicas'
// connections killed, so they miss every write from then on while clients
// go on writing. Nothing undoes it; the hold is meant to end with a
// failover (the node's own replicas, promoted, take writes again).
// Pausing a replica's process instead would lose nothing: what the primary
// sent waits in the kernel's socket buffers and arrives when it resumes.
func (d *Deployment) HoldReplication(ctx context.Context, addr string) error {
	p, err := d.serverAt(addr)
	if err != nil {
		return fmt.Errorf("hold replication: %w", err)
	}
	c := d.client(p)
	defer c.Close()
	if err := c.Do(ctx, "ACL", "SETUSER", ReplUser, "off").Err(); err != nil {
		return fmt.Errorf("hold replication on %s: %w", addr, err)
	}
	if err := c.Do(ctx, "CLIENT", "KILL", "USER", ReplUser).Err(); err != nil && !strings.Contains(err.Error(), "No such") {
		return fmt.Errorf("hold replication on %s: %w", addr, err)
	}
	return nil
}

// Pids lists the process ids of every process started, running or not.
func (d *Deployment) Pids() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	var pids []int
	for _, p := range append(append([]*Process(nil), d.Servers...), d.Sentinels...) {
		pids = append(pids, p.Pid)
	}
	return pids
}

// Close stops every process, waits for them and removes Dir. It is safe to
// call more than once and from several goroutines; every call returns once
// the first has finished (an interrupt closes from Spawn's goroutine while
// rlctl's own deferred Close runs: neither may return with servers alive
// or Dir still there).
func (d *Deployment) Close() error {
	d.closeOnce.Do(func() { d.closeErr = d.close() })
	return d.closeErr
}

func (d *Deployment) close() error {
	d.mu.Lock()
	d.closed = true
	procs := append(append([]*Process(nil), d.Sentinels...), d.Servers...)
	d.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.kill()
		}()
	}
	wg.Wait()
	if d.stop != nil {
		d.stop()
	}
	err := os.RemoveAll(d.Dir)
	if d.owner != nil {
		d.owner.Close() // after the removal: a sweeper must not race it
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", d.Dir, err)
	}
	return nil
}

// Linux sends the parent-death signal when the *thread* that forked the
// child exits, not the process. Go may end a thread when a goroutine that
// locked it finishes, so children are started from one goroutine that
// locks its thread and never ends: they die only with rlctl.
var (
	starterOnce sync.Once
	starterReq  chan starterJob
)

type starterJob struct {
	cmd  *exec.Cmd
	errc chan error
}

func startOnStarterThread(cmd *exec.Cmd) error {
	starterOnce.Do(func() {
		starterReq = make(chan starterJob)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for job := range starterReq {
				job.errc <- job.cmd.Start()
			}
		}()
	})
	errc := make(chan error, 1)
	starterReq <- starterJob{cmd: cmd, errc: errc}
	return <-errc
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// freePort returns a loopback TCP port that was free a moment ago.
// freePort is a loopback port free when asked; a variable so that a test
// can hand out one another process holds.
var freePort = func() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func readTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return "(empty log)"
}
