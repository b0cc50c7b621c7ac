package cli

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/redistest"
)

// `rlctl gateway serve` for real: three gateways on loopback sharing one
// Lua fixed window in a real redis-server; the fourth request of an
// identity through any of them is a 429 with Retry-After, and /metrics
// counts what happened. Ctrl-C stops it cleanly.
func TestGatewayServeSharesOneLimit(t *testing.T) {
	srv := redistest.Start(t)
	out := &syncBuffer{}
	f, errOut := testFactory(out, nil)
	done := make(chan int)
	sig := make(chan os.Signal, 1)
	go func() {
		done <- Run(f, []string{"gateway", "serve", "--redis", srv.URL(), "--algorithm", "redis-fixed-window",
			"--limit", "3/1m", "--gateways", "3", "--listen", "127.0.0.1:0", "--duration", "20s"}, sig, noExit(t))
	}()
	re := regexp.MustCompile(`gateway \d: (http://\S+)`)
	var urls []string
	for deadline := time.Now().Add(10 * time.Second); len(urls) < 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gateways never listed their URLs:\n%s\n%s", out.String(), errOut.String())
		}
		urls = nil
		for _, m := range re.FindAllStringSubmatch(out.String(), -1) {
			urls = append(urls, m[1])
		}
	}
	statuses := ""
	for i := 0; i < 5; i++ {
		req, _ := http.NewRequest(http.MethodGet, urls[i%3], nil)
		req.Header.Set("X-API-Key", "carol")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		statuses += resp.Status[:3] + " "
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
	}
	if statuses != "200 200 200 429 429 " {
		t.Errorf("statuses through three gateways: %s; want three 200s then 429s", statuses)
	}
	resp, err := http.Get(urls[0] + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `rlctl_gateway_requests_total{by="redis",endpoint="default",gateway="0",outcome="denied"} 1`) {
		t.Errorf("metrics do not count gateway 0's denial:\n%s", body)
	}
	select {
	case code := <-done:
		t.Fatalf("serve ended early with %d: %s", code, errOut.String())
	default:
	}
	sig <- os.Interrupt // Ctrl-C: the normal way to stop, exit 0
	wantExit(t, done, 0, errOut)
}

// wantExit waits for serve to exit and checks its code.
func wantExit(t *testing.T, done chan int, want int, errOut *syncBuffer) {
	t.Helper()
	select {
	case code := <-done:
		if code != want {
			t.Errorf("serve exited %d, want %d: %s", code, want, errOut)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// startServe runs `rlctl gateway serve` with args on a real redis-server
// and returns its first gateway's URL, the exit code channel and stderr.
func startServe(t *testing.T, srv *redistest.Server, sig chan os.Signal, exit func(int), args ...string) (string, chan int, *syncBuffer) {
	t.Helper()
	out := &syncBuffer{}
	f, errOut := testFactory(out, nil)
	done := make(chan int, 1)
	argv := append([]string{"gateway", "serve", "--redis", srv.URL(), "--algorithm", "redis-fixed-window",
		"--limit", "5/1m", "--listen", "127.0.0.1:0"}, args...)
	go func() { done <- Run(f, argv, sig, exit) }()
	re := regexp.MustCompile(`gateway 0: (http://\S+)`)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m[1], done, errOut
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d before listening: %s", code, errOut)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway never listed its URL:\n%s\n%s", out, errOut)
		}
	}
}

// inFlight sends one request for id in the background while Redis is
// paused for writes, and returns once the gateway's script call is held in
// Redis: the request is then in the middle of its handler.
func inFlight(t *testing.T, c *redis.Client, url, id string) chan *http.Response {
	t.Helper()
	ctx := context.Background()
	if err := c.Do(ctx, "CLIENT", "PAUSE", "60000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Do(context.Background(), "CLIENT", "UNPAUSE") })
	got := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("X-API-Key", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- nil
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got <- resp
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		info, err := c.Info(ctx, "clients").Result()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(info, "blocked_clients:0") {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the request never reached Redis:\n%s", info)
		}
	}
}

// waitRefused returns once the gateway at url no longer accepts
// connections: its shutdown has begun.
func waitRefused(t *testing.T, url string) {
	t.Helper()
	host := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		conn, err := net.DialTimeout("tcp", host, time.Second)
		if err != nil {
			return
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Fatal("the gateway still accepts connections after the interrupt")
		}
	}
}

// SIGINT and SIGTERM are how a gateway is normally stopped: it stops
// accepting, lets the request in flight finish (here one held in a paused
// real redis-server), says so on stderr and exits 0 — not 130 with
// "context canceled".
func TestGatewayServeDrainsInFlightOnInterrupt(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	sig := make(chan os.Signal, 2)
	url, done, errOut := startServe(t, srv, sig, noExit(t), "--timeout", "30s", "--drain-timeout", "30s")
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("X-API-Key", "warm")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("first request: %s", resp.Status)
	}
	got := inFlight(t, c, url, "dave")
	sig <- syscall.SIGTERM
	waitRefused(t, url)
	select {
	case code := <-done:
		t.Fatalf("serve exited %d with a request still in flight: %s", code, errOut)
	default:
	}
	if err := c.Do(context.Background(), "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case resp := <-got:
		if resp == nil || resp.StatusCode != http.StatusOK {
			t.Errorf("the request in flight at the interrupt got %v; want its 200", resp)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the request in flight never got its answer")
	}
	wantExit(t, done, 0, errOut)
	if s := errOut.String(); strings.Contains(s, "context canceled") || !strings.Contains(s, "1 request(s) in flight finished") {
		t.Errorf("stderr should say the stop drained one request, not report an error:\n%s", s)
	}
}

// A request still in flight when the drain timeout runs out is cut off:
// the status line says how many, and the exit code says the stop was not
// clean. A second signal still exits 130 at once.
func TestGatewayServeDrainTimeoutAndSecondSignal(t *testing.T) {
	t.Run("drain timeout", func(t *testing.T) {
		srv := redistest.Start(t)
		c := srv.Client(t)
		sig := make(chan os.Signal, 2)
		url, done, errOut := startServe(t, srv, sig, noExit(t), "--timeout", "30s", "--drain-timeout", "100ms")
		got := inFlight(t, c, url, "erin")
		sig <- os.Interrupt
		wantExit(t, done, 130, errOut) // a stop that cut a request off was not clean
		if s := errOut.String(); !strings.Contains(s, "1 request(s) still in flight after the 100ms drain timeout") {
			t.Errorf("stderr does not say a request was cut off:\n%s", s)
		}
		c.Do(context.Background(), "CLIENT", "UNPAUSE")
		<-got
	})
	t.Run("second signal", func(t *testing.T) {
		srv := redistest.Start(t)
		c := srv.Client(t)
		sig := make(chan os.Signal, 2)
		exited := make(chan int, 1)
		url, done, _ := startServe(t, srv, sig, func(code int) { exited <- code }, "--timeout", "30s", "--drain-timeout", "30s")
		got := inFlight(t, c, url, "frank")
		sig <- os.Interrupt
		waitRefused(t, url)
		sig <- os.Interrupt
		select {
		case code := <-exited:
			if code != 130 {
				t.Errorf("second signal exited %d, want 130", code)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a second signal did not exit at once")
		}
		c.Do(context.Background(), "CLIENT", "UNPAUSE")
		<-got
		<-done
	})
}

// An identity becomes part of a Redis key, so the gateway refuses, with a
// 400 that says why and before anything reaches Redis, one longer than
// --max-identity (256 bytes by default), an empty one and one holding
// control characters.
func TestGatewayServeRefusesBadIdentities(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	sig := make(chan os.Signal, 1)
	url, done, errOut := startServe(t, srv, sig, noExit(t), "--identity-query", "key")
	send := func(query, header string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url+"?"+query, nil)
		if header != "" {
			req.Header.Set("X-API-Key", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(body)
	}
	tests := []struct {
		name, query, header, want string
	}{
		{"header over the cap", "", strings.Repeat("a", 257), "257 bytes"},
		{"query over the cap", "key=" + strings.Repeat("b", 100000), "", "at most 256"},
		{"empty", "key=", "", "missing identity"},
		{"newline", "key=a%0Ab", "", "control character"},
		{"NUL", "key=a%00b", "", "control character"},
		{"DEL", "key=a%7Fb", "", "control character"},
	}
	for _, tt := range tests {
		code, body := send(tt.query, tt.header)
		if code != http.StatusBadRequest || !strings.Contains(body, tt.want) {
			t.Errorf("%s: %d %q; want 400 saying %q", tt.name, code, body, tt.want)
		}
	}
	if n := c.DBSize(context.Background()).Val(); n != 0 {
		t.Errorf("refused identities wrote %d key(s) to Redis: %v", n, c.Keys(context.Background(), "*").Val())
	}
	if code, body := send("", strings.Repeat("c", 256)); code != http.StatusOK {
		t.Errorf("an identity of exactly 256 bytes: %d %q; want 200", code, body)
	}
	if n := c.DBSize(context.Background()).Val(); n != 1 {
		t.Errorf("an accepted identity left %d key(s), want 1", n)
	}
	sig <- os.Interrupt
	wantExit(t, done, 0, errOut)

	for _, bad := range [][]string{{"--max-identity", "0"}, {"--max-identity", "-1"}, {"--drain-timeout", "0s"}, {"--clock-skew", "-1s"}} {
		f, errOut := testFactory(&syncBuffer{}, nil)
		argv := append([]string{"gateway", "serve", "--limit", "5/1m", "--listen", "127.0.0.1:0", "--duration", "1s"}, bad...)
		if code := Run(f, argv, nil, noExit(t)); code != 2 || !strings.Contains(errOut.String(), bad[0]) {
			t.Errorf("%v: exit %d, %q; want 2 naming the flag", bad, code, errOut)
		}
	}
}
