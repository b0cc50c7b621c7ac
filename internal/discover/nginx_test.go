//go:build unix

package discover

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/calmtest"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/target/httptarget"
)

// startNginx starts Debian's nginx on a free loopback port with a
// temporary config and directories, as a non-root process (nobody, when
// the test runs as root), its one location limited by limitReq (the
// arguments of limit_req after zone=) on a zone of rate, keyed on
// X-API-Key. It is stopped when the test ends.
func startNginx(t *testing.T, rate, limitReq string) string {
	t.Helper()
	return startNginxKeyed(t, "$http_x_api_key", rate, limitReq)
}

// startNginxKeyed is startNginx with the zone keyed on key.
func startNginxKeyed(t *testing.T, key, rate, limitReq string) string {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		// Debian puts it in /usr/sbin, which a user's PATH may lack.
		bin, err = exec.LookPath("/usr/sbin/nginx")
	}
	if err != nil {
		t.Fatalf("nginx not found on PATH: run `make test` (it installs Debian's nginx) or `apt-get install nginx`")
	}
	var url string
	redistest.StartOnFreePort(t, "Address already in use", func(port int) (log string, up bool) {
		url, log, up = runNginx(t, bin, port, key, rate, limitReq)
		return log, up
	})
	return url
}

// runNginx starts nginx on port in a directory of its own and waits until
// it is ready. It returns nginx's error log and false when nginx exited
// first.
func runNginx(t *testing.T, bin string, port int, key, rate, limitReq string) (url, errorLog string, ok bool) {
	t.Helper()
	dir, err := os.MkdirTemp("", "rlctl-nginx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	www := filepath.Join(dir, "www")
	if err := os.MkdirAll(www, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(www, "index.html"), []byte("ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`worker_processes 1;
daemon off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    limit_req_zone %[5]s zone=discover:1m rate=%[3]s;
    limit_req_status 429;
    server {
        listen 127.0.0.1:%[2]d;
        location / {
            limit_req zone=discover %[4]s;
            root %[1]s/www;
        }
    }
}
`, dir, port, rate, limitReq, key)
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", confPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if os.Geteuid() == 0 {
		// nginx started by root keeps a root master; run all of it as
		// nobody instead, in directories nobody owns.
		u, err := user.Lookup("nobody")
		if err != nil {
			t.Fatalf("running as root needs a user nobody to start nginx as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Chown(p, uid, gid) })
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	out, _ := os.Create(filepath.Join(t.TempDir(), "nginx.out"))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nginx: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	// nginx writes its pid file only once its sockets are bound and
	// listening, so the port answering is nginx, not whatever else took
	// the port first.
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	pid := []byte(strconv.Itoa(cmd.Process.Pid))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			return "", string(log), false
		default:
		}
		if b, err := os.ReadFile(filepath.Join(dir, "nginx.pid")); err == nil && bytes.Equal(bytes.TrimSpace(b), pid) {
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				return "http://" + addr + "/", "", true
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx did not listen on %s", addr)
		}
	}
}

// TestDiscoverNginxNodelay: limit_req with nodelay is a token bucket. Of
// burst=9, nginx admits 10 at once (the request that finds the bucket
// empty plus nine in excess), so the bucket's capacity is 10.
func TestDiscoverNginxNodelay(t *testing.T) {
	t.Parallel()
	url := startNginx(t, "10r/s", "burst=9 nodelay")
	res := discoverURLs(t, 300, url)
	check(t, res, want{class: TokenBucket, rate: 10, burst: 10, aligned: AlignNone})
	if res.Policy.RetryAfter != RetryMissing {
		t.Errorf("retry_after %q, want missing: nginx sends none", res.Policy.RetryAfter)
	}
}

// TestDiscoverNginxQueue: limit_req without nodelay delays requests to
// its rate and denies only what overflows burst: a leaky bucket as a
// queue, holding burst+1 (6 for burst=5).
func TestDiscoverNginxQueue(t *testing.T) {
	t.Parallel()
	url := startNginx(t, "10r/s", "burst=5")
	res := discoverURLs(t, 300, url)
	p := res.Policy
	if !res.Found || p.Algorithm != LeakyBucket {
		t.Fatalf("algorithm %q, want %q: %s", p.Algorithm, LeakyBucket, p.Evidence["algorithm"].Evidence)
	}
	if !within(p.RatePerS, 10) {
		t.Errorf("rate %.4g/s, want 10/s±10%%", p.RatePerS)
	}
	if !within(p.Burst, 6) {
		t.Errorf("burst %.4g, want 6±10%%", p.Burst)
	}
}

// TestDiscoverNginxNotShared: two nginx instances, each with its own
// zone, are found to keep a limit each.
func TestDiscoverNginxNotShared(t *testing.T) {
	t.Parallel()
	a := startNginx(t, "10r/s", "burst=9 nodelay")
	b := startNginx(t, "10r/s", "burst=9 nodelay")
	res := discoverURLs(t, 300, a, b)
	if res.Policy.Shared == nil || *res.Policy.Shared {
		t.Errorf("shared %v, want false: %s", res.Policy.Shared, res.Policy.Evidence["shared"].Evidence)
	}
}

// TestDiscoverNginxKeyedOnAddress: nginx's usual limit_req_zone key is
// the client's address; with source addresses of its own per identity
// (the CLI's --identity-source) discover still sees one limit each.
func TestDiscoverNginxKeyedOnAddress(t *testing.T) {
	t.Parallel()
	url := startNginxKeyed(t, "$binary_remote_addr", "10r/s", "burst=4 nodelay")
	srcs, err := httptarget.SourceAddrs("127.0.1.0/28", DefaultMaxIdentities+1)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := httptarget.New(httptarget.Options{URLs: []string{url}, Sources: srcs[:DefaultMaxIdentities], ProbeSource: srcs[DefaultMaxIdentities]})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	// The burst is what a fresh identity got back to back less the refill
	// over their span: a stall of this binary within it stretches the
	// span by less than one refill, which nginx does not turn into an
	// admission, and the burst reads one short. That runs again, a second
	// later: the sources are the same, and nginx has refilled each one's
	// bucket by then (10r/s, burst=4).
	var res *Result
	calmtest.Retry(t, 3, func(try int) string {
		if try > 1 {
			time.Sleep(time.Second)
		}
		watch := calmtest.Watch()
		var err error
		res, err = Run(context.Background(), Options{Target: tg, Budget: 300, MaxDuration: 40 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if stalled := watch(); stalled > 5*time.Millisecond && !within(res.Policy.Burst, 5) {
			return fmt.Sprintf("burst %.4g while the test binary stalled %v (a busy machine)", res.Policy.Burst, stalled)
		}
		return ""
	})
	check(t, res, want{class: TokenBucket, rate: 10, burst: 5, aligned: AlignNone})
}

// TestDiscoverNginx503: nginx denies with 503 unless limit_req_status
// says otherwise; discover, told only of 429, finds no limit and says
// which status to name.
func TestDiscoverNginx503(t *testing.T) {
	t.Parallel()
	url := startNginxKeyed(t, "$http_x_api_key", "10r/s", "burst=4 nodelay; limit_req_status 503")
	res := discoverURLs(t, 60, url)
	if res.Found || !strings.Contains(strings.Join(res.Notes, " "), "--denied-status 503") {
		t.Errorf("found %v, notes %q: want no limit and a hint to name 503", res.Found, res.Notes)
	}
}

// nginxStudyTargets are the accuracy study's nginx targets.
func nginxStudyTargets() []studyTarget {
	return []studyTarget{
		{name: "nginx/nodelay", want: want{class: TokenBucket, rate: 10, burst: 10, aligned: AlignNone},
			start: func(t *testing.T, _ string, _ int) []string {
				return []string{startNginx(t, "10r/s", "burst=9 nodelay")}
			}},
		{name: "nginx/queue", want: want{class: LeakyBucket, rate: 10, burst: 6},
			start: func(t *testing.T, _ string, _ int) []string { return []string{startNginx(t, "10r/s", "burst=5")} }},
	}
}
