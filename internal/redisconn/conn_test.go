package redisconn_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/redistest"
)

func TestConnectEveryMode(t *testing.T) {
	t.Parallel()
	standalone := redistest.Start(t)
	acl := redistest.StartACL(t)
	cluster := redistest.StartCluster(t)
	sentinel := redistest.StartSentinel(t, standalone)
	tlsSrv := redistest.StartMutualTLS(t)
	sock := filepath.Join(t.TempDir(), "r.sock")
	redistest.Start(t, "--unixsocket", sock, "--unixsocketperm", "700")
	aclSentinel := redistest.StartSentinel(t, acl)

	tests := []struct {
		name string
		opts redisconn.Options
		mode redisconn.Mode
	}{
		{"standalone", redisconn.Options{URL: standalone.URL()}, redisconn.ModeStandalone},
		{"acl", redisconn.Options{URL: acl.URL()}, redisconn.ModeStandalone},
		{"acl via REDISCLI_AUTH", redisconn.Options{URL: "redis://" + redistest.ACLUser + "@" + acl.Addr,
			Getenv: func(k string) string {
				if k == "REDISCLI_AUTH" {
					return acl.Password
				}
				return ""
			}}, redisconn.ModeStandalone},
		{"cluster", redisconn.Options{URL: cluster.URL}, redisconn.ModeCluster},
		{"sentinel", redisconn.Options{URL: sentinel.URL}, redisconn.ModeSentinel},
		{"unix socket", redisconn.Options{URL: "unix://" + sock + "?db=3"}, redisconn.ModeStandalone},
		{"sentinel with acl data nodes", redisconn.Options{URL: aclSentinel.URL}, redisconn.ModeSentinel},
		{"tls with client cert", redisconn.Options{URL: tlsSrv.URL(), TLSCA: tlsSrv.Certs.CA,
			TLSCert: tlsSrv.Certs.ClientCert, TLSKey: tlsSrv.Certs.ClientKey}, redisconn.ModeStandalone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			cfg, err := redisconn.Parse(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Mode() != tt.mode {
				t.Errorf("Mode() = %s, want %s", cfg.Mode(), tt.mode)
			}
			c, err := cfg.Connect(ctx)
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			defer c.Close()
			if err := c.Set(ctx, "{x}k", "v", time.Minute).Err(); err != nil {
				t.Fatalf("SET: %v", err)
			}
			// Each NewClient has its own pool: closing one leaves the other.
			c2 := cfg.NewClient()
			c2.Close()
			if got := c.Get(ctx, "{x}k").Val(); got != "v" {
				t.Errorf("GET after closing a sibling client = %q", got)
			}

			// WithDialer: the same through a dialer of the caller's, which
			// opens every connection (Sentinels' and nodes' alike), TLS on
			// top.
			var mu sync.Mutex
			dialed := map[string]bool{}
			via := cfg.WithDialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
				mu.Lock()
				dialed[addr] = true
				mu.Unlock()
				var d net.Dialer
				return d.DialContext(ctx, network, addr)
			})
			vc, err := via.Connect(ctx)
			if err != nil {
				t.Fatalf("Connect through the dialer: %v", err)
			}
			defer vc.Close()
			if got := vc.Get(ctx, "{x}k").Val(); got != "v" {
				t.Errorf("GET through the dialer = %q", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if first := cfg.Target().Addrs[0]; !dialed[first] {
				t.Errorf("the dialer saw %v, not the URL's address %s", dialed, first)
			}
			if tt.mode == redisconn.ModeSentinel && len(dialed) < 2 {
				t.Errorf("the dialer saw %v: a Sentinel client dials a Sentinel and the primary", dialed)
			}
		})
	}
}

func TestCheckFailures(t *testing.T) {
	t.Parallel()
	acl := redistest.StartACL(t)
	tlsSrv := redistest.StartTLS(t)
	silent, _ := redistest.Silent(t)
	web := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(web.Close)

	tests := []struct {
		name, url, tlsCA, kind string
	}{
		{"refused", "redis://u:refused-secret@127.0.0.1:1", "", "connection refused"},
		{"wrong password", "redis://" + redistest.ACLUser + ":wrong-secret@" + acl.Addr, "", "authentication failed"},
		{"no password", "redis://" + acl.Addr, "", "authentication failed"},
		{"silent server", "redis://:silent-secret@" + silent, "", "timed out"},
		{"untrusted certificate", tlsSrv.URL(), "", "TLS handshake failed"},
		{"plain to tls port", "redis://" + tlsSrv.Addr, "", ""},
		{"an http server", "redis://:web-secret@" + web.Listener.Addr().String(), "", `not a Redis server: redis: can't parse map reply: "HTTP/1.1 400 Bad Request"`},
		{"no sentinel listens", "redis+sentinel://127.0.0.1:1/m?sentinel_password=sent-secret", "", "sentinel 127.0.0.1:1: dial tcp 127.0.0.1:1: connect: connection refused"},
		{"cluster nothing listens", "redis+cluster://:cl-secret@127.0.0.1:1,127.0.0.1:2", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := redisconn.Parse(redisconn.Options{URL: tt.url, TLSCA: tt.tlsCA, Timeout: 500 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			_, err = cfg.Connect(context.Background())
			if err == nil {
				t.Fatal("Connect succeeded")
			}
			if code := exitcode.Of(err); code != exitcode.Unreachable {
				t.Errorf("exit code %d, want %d (%v)", code, exitcode.Unreachable, err)
			}
			msg := err.Error()
			if tt.kind != "" && !strings.Contains(msg, tt.kind) {
				t.Errorf("error %q does not say %q", msg, tt.kind)
			}
			if strings.Contains(msg, "secret") {
				t.Errorf("error leaks a password: %q", msg)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			if !strings.HasPrefix(msg, "redis "+cfg.String()+": ping: ") {
				t.Errorf("error %q does not start with the redacted URL", msg)
			}
		})
	}
}

func TestConnErrorKeepsInterruption(t *testing.T) {
	cfg, err := redisconn.Parse(redisconn.Options{URL: "redis://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = cfg.ConnError(ctx, "ping", context.Canceled)
	if exitcode.Of(err) != exitcode.Interrupted {
		t.Errorf("cancelled call: exit code %d, want %d", exitcode.Of(err), exitcode.Interrupted)
	}
}

func TestParseErrorsAreUsage(t *testing.T) {
	for _, o := range []redisconn.Options{
		{URL: "redis://h:1?nope=1"},
		{URL: "redis://h:1", TLSCA: "ca.pem"},
		{URL: "rediss://h:1", TLSCA: "/nonexistent/ca.pem"},
		{URL: "rediss://h:1", TLSCert: "c.pem"},
	} {
		_, err := redisconn.Parse(o)
		if err == nil {
			t.Errorf("Parse(%+v) succeeded", o)
			continue
		}
		if exitcode.Of(err) != exitcode.Usage {
			t.Errorf("Parse(%+v): exit code %d, want %d", o, exitcode.Of(err), exitcode.Usage)
		}
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	t.Run("embedded", func(t *testing.T) {
		cfg, stop, err := redisconn.Open(ctx, "embedded", redisconn.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.String() != "embedded" || !cfg.IsEmbedded() {
			t.Errorf("String() = %q, IsEmbedded = %v", cfg.String(), cfg.IsEmbedded())
		}
		c, err := cfg.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if _, err := cfg.Connect(ctx); err == nil {
			t.Error("embedded server still answers after stop")
		}
	})
	t.Run("spawn", func(t *testing.T) {
		redistest.Binary(t)
		cfg, stop, err := redisconn.Open(ctx, "spawn", redisconn.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := cfg.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		info := c.Info(ctx, "server").Val()
		c.Close()
		if !strings.Contains(info, "redis_version:") {
			t.Errorf("spawned server INFO lacks redis_version: %q", info)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		cfg2, _ := redisconn.Parse(redisconn.Options{URL: "redis://" + strings.TrimSuffix(strings.TrimPrefix(cfg.String(), "spawn ("), ")"), Timeout: time.Second})
		if _, err := cfg2.Connect(ctx); err == nil {
			t.Error("spawned server still answers after stop")
		}
	})
	t.Run("spawn without redis-server", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		_, _, err := redisconn.Open(ctx, "spawn", redisconn.Options{})
		if err == nil {
			t.Fatal("Open(spawn) succeeded without redis-server on PATH")
		}
		if exitcode.Of(err) != exitcode.Unreachable || !strings.Contains(err.Error(), "redis-server not found on PATH") {
			t.Errorf("err = %v (exit %d), want exit 3 and an instruction", err, exitcode.Of(err))
		}
	})
	t.Run("url", func(t *testing.T) {
		s := redistest.Start(t)
		cfg, stop, err := redisconn.Open(ctx, s.URL(), redisconn.Options{URL: "ignored://"})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		c, err := cfg.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	})
}

var _ redis.UniversalClient = (*redis.Client)(nil)
