package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/redistest"
)

// scriptCmds are testscript commands that start real Redis deployments for
// a script and talk to them. Each deployment stops when the script ends.
//
//	redis-server NAME [--acl] [--tls|--mtls] [directive args...]
//	    one redis-server; exports NAME_URL (redis://, or rediss:// with
//	    --tls; with --acl it carries an ACL user and password) and
//	    NAME_ADDR. --acl also exports NAME_USER and NAME_PASSWORD (the
//	    default user is then disabled); --tls exports NAME_CA, NAME_CERT
//	    and NAME_KEY (the client certificate, which --mtls makes the
//	    server demand). Other arguments are
//	    redis-server config directives ("--maxmemory 10mb").
//	redis-cluster NAME
//	    a 3-master Cluster; exports NAME_URL (redis+cluster://) and
//	    NAME_ADDR (the first master).
//	redis-sentinel NAME [--replicas N]
//	    a primary (and N replicas) watched by one Sentinel as "mymaster";
//	    exports NAME_URL (redis+sentinel://), NAME_ADDR (the Sentinel),
//	    NAME_PRIMARY_URL and NAME_REPLICA0_URL, NAME_REPLICA1_URL, ...
//	redis-cli-cmd URLVAR command [args...]
//	    runs one command against the URL in $URLVAR (any rlctl URL form)
//	    and prints the reply: strings as they are, integers in decimal,
//	    arrays one element per line, nil as (nil).
func scriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(*testscript.TestScript, bool, []string){
		"redis-server":   cmdRedisServer,
		"redis-cluster":  cmdRedisCluster,
		"redis-sentinel": cmdRedisSentinel,
		"redis-cli-cmd":  cmdRedisCliCmd,
	}
}

func spawnFor(ts *testscript.TestScript, opts redisconn.SpawnOptions) *redisconn.Deployment {
	d, err := redisconn.Spawn(context.Background(), opts)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	ts.Defer(func() { d.Close() })
	return d
}

func scriptName(ts *testscript.TestScript, neg bool, args []string, usage string) string {
	if neg {
		ts.Fatalf("unsupported: ! %s", usage)
	}
	if len(args) < 1 || args[0] == "" {
		ts.Fatalf("usage: %s", usage)
	}
	return args[0]
}

func cmdRedisServer(ts *testscript.TestScript, neg bool, args []string) {
	name := scriptName(ts, neg, args, "redis-server NAME [--acl] [--tls|--mtls] [directive args...]")
	var opts redisconn.SpawnOptions
	var certs *redistest.Certs
	for _, a := range args[1:] {
		switch a {
		case "--acl":
			opts.Username, opts.Password = redistest.ACLUser, "pw-"+strconv.FormatInt(time.Now().UnixNano(), 36)
		case "--tls", "--mtls":
			var err error
			dir := filepath.Join(ts.Getenv("WORK"), ".tls-"+name)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				ts.Fatalf("%v", err)
			}
			if certs, err = redistest.WriteCerts(dir); err != nil {
				ts.Fatalf("%v", err)
			}
			opts.TLS = &redisconn.SpawnTLS{CertFile: certs.ServerCert, KeyFile: certs.ServerKey, CAFile: certs.CA,
				AuthClients: a == "--mtls"}
		default:
			opts.Args = append(opts.Args, a)
		}
	}
	d := spawnFor(ts, opts)
	ts.Setenv(name+"_URL", d.URL())
	ts.Setenv(name+"_ADDR", d.Servers[0].Addr)
	if opts.Password != "" {
		ts.Setenv(name+"_USER", opts.Username)
		ts.Setenv(name+"_PASSWORD", opts.Password)
	}
	if certs != nil {
		ts.Setenv(name+"_CA", certs.CA)
		ts.Setenv(name+"_CERT", certs.ClientCert)
		ts.Setenv(name+"_KEY", certs.ClientKey)
	}
}

func cmdRedisCluster(ts *testscript.TestScript, neg bool, args []string) {
	name := scriptName(ts, neg, args, "redis-cluster NAME")
	d := spawnFor(ts, redisconn.SpawnOptions{Cluster: true})
	ts.Setenv(name+"_URL", d.URL())
	ts.Setenv(name+"_ADDR", d.Servers[0].Addr)
}

func cmdRedisSentinel(ts *testscript.TestScript, neg bool, args []string) {
	const usage = "redis-sentinel NAME [--replicas N]"
	name := scriptName(ts, neg, args, usage)
	opts := redisconn.SpawnOptions{Sentinels: 1}
	switch {
	case len(args) == 3 && args[1] == "--replicas":
		n, err := strconv.Atoi(args[2])
		if err != nil || n < 0 {
			ts.Fatalf("usage: %s", usage)
		}
		opts.Replicas = n
	case len(args) != 1:
		ts.Fatalf("usage: %s", usage)
	}
	d := spawnFor(ts, opts)
	ts.Setenv(name+"_URL", d.URL())
	ts.Setenv(name+"_ADDR", d.Sentinels[0].Addr)
	ts.Setenv(name+"_PRIMARY_URL", d.ServerURL(0))
	for i := 1; i < len(d.Servers); i++ {
		ts.Setenv(fmt.Sprintf("%s_REPLICA%d_URL", name, i-1), d.ServerURL(i))
	}
}

func cmdRedisCliCmd(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: redis-cli-cmd URLVAR command [args...]")
	}
	raw := ts.Getenv(args[0])
	if raw == "" {
		ts.Fatalf("redis-cli-cmd: $%s is empty", args[0])
	}
	opts := redisconn.Options{URL: raw, Timeout: 5 * time.Second}
	if strings.HasPrefix(raw, "rediss") {
		// The matching redis-server --tls exported its CA as ${NAME}_CA.
		opts.TLSCA = ts.Getenv(strings.TrimSuffix(args[0], "_URL") + "_CA")
	}
	cfg, err := redisconn.Parse(opts)
	if err != nil {
		ts.Fatalf("redis-cli-cmd: %v", err)
	}
	client := cfg.NewClient()
	defer client.Close()
	cmdArgs := make([]any, len(args)-1)
	for i, a := range args[1:] {
		cmdArgs[i] = a
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := client.Do(ctx, cmdArgs...).Result()
	if err == redis.Nil {
		v, err = nil, nil
	}
	if err != nil {
		if !neg {
			ts.Fatalf("redis-cli-cmd %s: %v", strings.Join(args[1:], " "), cfg.RedactError(err))
		}
		fmt.Fprintf(ts.Stdout(), "%v\n", cfg.RedactError(err))
		return
	}
	if neg {
		ts.Fatalf("redis-cli-cmd %s: unexpected success", strings.Join(args[1:], " "))
	}
	writeReply(ts, v)
}

func writeReply(ts *testscript.TestScript, v any) {
	switch x := v.(type) {
	case nil:
		fmt.Fprintln(ts.Stdout(), "(nil)")
	case []any:
		for _, e := range x {
			writeReply(ts, e)
		}
	case map[any]any:
		for k, e := range x {
			writeReply(ts, k)
			writeReply(ts, e)
		}
	default:
		fmt.Fprintln(ts.Stdout(), x)
	}
}
