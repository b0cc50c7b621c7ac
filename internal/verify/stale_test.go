package verify

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/score"
)

// Two runs against real gateways (ulule/limiter's middleware on a real
// redis-server) with the same identities inside one window: the first
// meets fresh counters and says nothing of them; the second's identities
// are each denied their first request, and its report says their counters
// were not fresh, and why that matters, instead of reading a window that
// started full as the design's figure.
func TestSecondRunInTheWindowSaysItsCountersWereNotFresh(t *testing.T) {
	t.Parallel()
	url := ululeGateway(t, 3, time.Minute)
	doc := fmt.Sprintf(`name: twice
limit: 3/1m
target: {kind: http, urls: [%q]}
traffic: {rate: 6/s, duration: 1500ms, identities: 2}
`, url)
	stale := func(out *Outcome) string {
		for _, n := range out.Report.Notes {
			if strings.Contains(n, "very first request") {
				return n
			}
		}
		return ""
	}
	first, err := Run(context.Background(), parse(t, doc), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if first.Report.Status != score.StatusPass {
		t.Fatalf("first run %s: %s", first.Report.Status, first.Report.Error)
	}
	if n := stale(first); n != "" {
		t.Errorf("first run, fresh counters: %s", n)
	}
	second, err := Run(context.Background(), parse(t, doc), Options{})
	if err != nil && second == nil {
		t.Fatal(err)
	}
	if n := stale(second); !strings.HasPrefix(n, "2 of 2 identities were denied their very first request") {
		t.Errorf("second run: note %q; notes %q", n, second.Report.Notes)
	}
}
