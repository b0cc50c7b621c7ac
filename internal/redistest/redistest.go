package redistest

import (
	"context"
	"crypto/tls"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/redisconn"
)

// Server is one running redis-server.
type Server struct {
	Addr string // 127.0.0.1:port
	Port int
	Dir  string
	// Username and Password are the credentials the server wants (empty
	// when it wants none).
	Username string
	Password string
	// Deployment is the spawned process group behind the server.
	Deployment *redisconn.Deployment

	tls *tls.Config
	url string
}

// URL connects to the server: redis://Addr, or rediss:// for StartTLS,
// with the credentials in it for StartACL (redact before printing).
func (s *Server) URL() string { return s.url }

// Client returns a new client for the server (with its credentials and
// TLS settings), closed when the test ends.
func (s *Server) Client(t testing.TB) *redis.Client {
	o := &redis.Options{Addr: s.Addr, Username: s.Username, Password: s.Password, DisableIdentity: true}
	if s.tls != nil {
		o.TLSConfig = s.tls.Clone()
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// Stop kills the server and waits for it. Tests need not call it: the
// server stops when the test ends.
func (s *Server) Stop() {
	if s.Deployment != nil {
		s.Deployment.Close()
	}
}

// Binary returns the path of redis-server, failing the test when absent.
func Binary(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found on PATH: run `make test` (it installs Debian's redis-server) or `apt-get install redis-server`")
	}
	return p
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// StartOnFreePort calls start with a free port until the server it starts
// there is up. A port free a moment ago can be taken by another test's
// server before this one binds it; the server then exits, its log says
// inUse, and another port is tried, three in all. start returns the
// server's log and false when the server exited before it was up.
func StartOnFreePort(t testing.TB, inUse string, start func(port int) (log string, up bool)) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		log, up := start(FreePort(t))
		if up {
			return
		}
		if attempt == 3 || !strings.Contains(log, inUse) {
			t.Fatalf("the server exited before it was up:\n%s", log)
		}
	}
}

// Spawn starts the deployment opts describes, stopped when the test ends.
func Spawn(t testing.TB, opts redisconn.SpawnOptions) *redisconn.Deployment {
	t.Helper()
	opts.Binary = Binary(t)
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	d, err := redisconn.Spawn(context.Background(), opts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func serverOf(d *redisconn.Deployment, i int, opts redisconn.SpawnOptions, tlsCfg *tls.Config) *Server {
	p := d.Servers[i]
	return &Server{Addr: p.Addr, Port: p.Port, Dir: p.Dir, Username: opts.Username, Password: opts.Password,
		Deployment: d, tls: tlsCfg, url: d.ServerURL(i)}
}

// Start runs a redis-server with the given extra config directives
// ("--appendonly", "yes", ...) and waits until it answers PING.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	opts := redisconn.SpawnOptions{Args: args}
	return serverOf(Spawn(t, opts), 0, opts, nil)
}

// StartReplica starts a redis-server replicating primary (with primary's
// credentials) and waits until the replication link is up.
func StartReplica(t testing.TB, primary *Server) *Server {
	t.Helper()
	opts := redisconn.SpawnOptions{Username: primary.Username, Password: primary.Password,
		Args:         []string{"--replicaof", "127.0.0.1", itoa(primary.Port)},
		ReplPassword: primary.Deployment.ReplPassword()}
	s := serverOf(Spawn(t, opts), 0, opts, nil)
	c := s.Client(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := c.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s never synced with %s: %v", s.Addr, primary.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Cluster is a running Redis Cluster.
type Cluster struct {
	// URL is redis+cluster:// with every master as a seed.
	URL string
	// Addrs are the masters' addresses.
	Addrs      []string
	Deployment *redisconn.Deployment
}

// StartCluster starts a 3-master Cluster with all 16384 slots assigned and
// waits until every node reports cluster_state:ok.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	d := Spawn(t, redisconn.SpawnOptions{Cluster: true})
	c := &Cluster{URL: d.URL(), Deployment: d}
	for _, p := range d.Servers {
		c.Addrs = append(c.Addrs, p.Addr)
	}
	return c
}

// Sentinel is one running Sentinel watching a primary.
type Sentinel struct {
	Addr       string
	MasterName string
	// URL is redis+sentinel://Addr/MasterName, with the primary's
	// credentials.
	URL        string
	Deployment *redisconn.Deployment
}

// StartSentinel starts a Sentinel monitoring primary under the master name
// "mymaster" and waits until it answers for it.
func StartSentinel(t testing.TB, primary *Server) *Sentinel {
	t.Helper()
	d := Spawn(t, redisconn.SpawnOptions{Sentinels: 1, Monitor: primary.Addr,
		Username: primary.Username, Password: primary.Password})
	return &Sentinel{Addr: d.Sentinels[0].Addr, MasterName: d.MasterName, URL: d.URL(), Deployment: d}
}

// ACLUser is the user StartACL creates.
const ACLUser = "rlctl-test"

// StartACL starts a redis-server whose default user is disabled and whose
// only user is ACLUser with a password (in s.Password; s.URL carries both).
func StartACL(t testing.TB) *Server {
	t.Helper()
	opts := redisconn.SpawnOptions{Username: ACLUser, Password: "pw-" + randHex(t, 8)}
	return serverOf(Spawn(t, opts), 0, opts, nil)
}

// TLSServer is a TLS-only redis-server and the files that trust it.
type TLSServer struct {
	*Server
	// Certs are the generated CA, server and client certificates.
	Certs *Certs
}

// StartTLS generates a CA and a server certificate for 127.0.0.1 and
// starts a redis-server serving TLS only (no plain port); clients need no
// certificate of their own.
func StartTLS(t testing.TB) *TLSServer {
	t.Helper()
	return startTLS(t, false)
}

// StartMutualTLS is StartTLS with client authentication: the server
// demands a client certificate signed by the CA (Certs.ClientCert and
// Certs.ClientKey, which s.Client uses).
func StartMutualTLS(t testing.TB) *TLSServer {
	t.Helper()
	return startTLS(t, true)
}

func startTLS(t testing.TB, clientCerts bool) *TLSServer {
	t.Helper()
	certs := GenerateCerts(t)
	opts := redisconn.SpawnOptions{TLS: &redisconn.SpawnTLS{CertFile: certs.ServerCert, KeyFile: certs.ServerKey,
		CAFile: certs.CA, AuthClients: clientCerts}}
	d := Spawn(t, opts)
	cfg := &tls.Config{RootCAs: certs.Pool, MinVersion: tls.VersionTLS12}
	if clientCerts {
		pair, err := tls.LoadX509KeyPair(certs.ClientCert, certs.ClientKey)
		if err != nil {
			t.Fatalf("load client certificate: %v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return &TLSServer{Server: serverOf(d, 0, opts, cfg), Certs: certs}
}
