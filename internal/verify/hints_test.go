package verify

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/metric"
)

// familyGateway is a gateway rlctl did not write: a fixed window of limit
// requests per identity, windows aligned on whole seconds, answering in one
// rate-limit header family only, with no Retry-After, so a client can only
// learn when to come back from that family.
type familyGateway struct {
	form  string
	limit int
	mu    sync.Mutex
	count map[string]int
	win   map[string]int64
}

func (g *familyGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("X-API-Key")
	now := time.Now()
	win := now.Unix()
	g.mu.Lock()
	if g.win[id] != win {
		g.win[id], g.count[id] = win, 0
	}
	g.count[id]++
	n := g.count[id]
	g.mu.Unlock()
	left := max(0, g.limit-n)
	resetAt := time.Unix(win+1, 0)
	secs := int64(math.Ceil(resetAt.Sub(now).Seconds()))
	h := w.Header()
	switch g.form {
	case "draft-11":
		h.Set("RateLimit-Policy", fmt.Sprintf(`"per-second";q=%d;w=1`, g.limit))
		h.Set("RateLimit", fmt.Sprintf(`"per-second";r=%d;t=%d`, left, secs))
	case "draft-06":
		h.Set("RateLimit-Limit", strconv.Itoa(g.limit))
		h.Set("RateLimit-Remaining", strconv.Itoa(left))
		h.Set("RateLimit-Reset", strconv.FormatInt(secs, 10))
	case "x-ratelimit":
		h.Set("X-RateLimit-Limit", strconv.Itoa(g.limit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(left))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(resetAt.Unix(), 10)) // a Unix timestamp, as GitHub sends
	}
	if n > g.limit {
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// verify reads draft-11, draft-06 and X-RateLimit-* from a real foreign
// gateway on loopback: clients that honour the reset come back when each
// family said, the retries record that wait (never more than the second a
// window lasts), and the report says which family the target spoke.
func TestVerifyReadsEveryRateLimitFamily(t *testing.T) {
	t.Parallel()
	for _, form := range []string{"draft-11", "draft-06", "x-ratelimit"} {
		t.Run(form, func(t *testing.T) {
			t.Parallel()
			gw := httptest.NewServer(&familyGateway{form: form, limit: 3, count: map[string]int{}, win: map[string]int64{}})
			defer gw.Close()
			out := run(t, parse(t, fmt.Sprintf(`name: foreign-%s
limit: 3/1s
target:
  kind: http
  urls: [%s/]
  timeout: 2s   # a loaded machine: slowness is not what is tested
traffic:
  model: closed
  concurrency: 4
  duration: 1500ms
  retry: {honor: ratelimit-reset, jitter: none, max_attempts: 3}
thresholds:
  - relimited <= 1
`, form, gw.URL)))
			if out.Report.Error != "" {
				t.Fatalf("run error: %s", out.Report.Error)
			}
			if got := out.Report.HeaderForms; !slices.Equal(got, []string{form}) {
				t.Fatalf("report says the target spoke %v, want [%s]", got, form)
			}
			if !slices.ContainsFunc(out.Report.Notes, func(n string) bool { return strings.Contains(n, "the target's answers carried") }) {
				t.Errorf("no note says which fields the target spoke: %v", out.Report.Notes)
			}
			h := out.History
			retries := 0
			for i := range h.Len() {
				if h.Attempt(i) == 0 {
					continue
				}
				retries++
				// The family's reset was read: a wait of at most the
				// window, which the retry then kept.
				told := h.Told(i)
				if told == history.NoTime || told < 0 || told > time.Second {
					t.Fatalf("retry %d was told %v by the %s fields, want a reset within the 1s window", i, told, form)
				}
				if h.Waited(i) < told {
					t.Fatalf("retry %d waited %v, less than the %v it read", i, h.Waited(i), told)
				}
			}
			if retries == 0 {
				t.Fatal("no client retried: the gateway denied nothing?")
			}
			if _, ok := out.Report.Metrics[metric.Relimited]; !ok {
				t.Error("relimited not measured for retrying clients")
			}
		})
	}
}
