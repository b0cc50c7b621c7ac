package cli

import (
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/redistest"
)

// `rlctl gateway serve` for real: three gateways on loopback sharing one
// Lua fixed window in a real redis-server; the fourth request of an
// identity through any of them is a 429 with Retry-After, and /metrics
// counts what happened. The command stops by itself (--duration).
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
	sig <- os.Interrupt // Ctrl-C: stop serving, exit 130
	select {
	case code := <-done:
		if code != 130 {
			t.Errorf("interrupted serve exited %d, want 130", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop on interrupt")
	}
}
