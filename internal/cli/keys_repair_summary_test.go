package cli

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/redistest"
)

// TestRepairSummaryListsWhatItCounts: the keys without TTL the summary's
// first line counts are the keys listed below it, each once (before, it
// said 2 and listed 2 + 1), and the dry run says the TTL each layout's
// keys would get.
func TestRepairSummaryListsWhatItCounts(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	for k, v := range map[string]string{"rl:fw:{a}": "3", "rl:gi:{b}": "4", "rl:fw:{c}": "not a counter", "rl:sw:{d}:29400000": "1", "app:x": "1"} {
		if err := c.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	out := &syncBuffer{}
	f, errOut := testFactory(out, nil)
	if code := Run(f, []string{"keys", "repair-ttl", "--dry-run", "--limit", "10/1m", "--redis", srv.URL()}, nil, noExit(t)); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	text := out.String()
	m := regexp.MustCompile(`(\d+) of them without TTL`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no count of keys without TTL in %q", text)
	}
	counted, _ := strconv.Atoi(m[1])
	listed := regexp.MustCompile(`(?m)^ +"?rl:[^ ]+"?$`).FindAllString(text, -1)
	if counted != 4 || len(listed) != counted {
		t.Fatalf("counted %d without TTL, listed %d %q; want 4 and each listed once:\n%s", counted, len(listed), listed, text)
	}
	for _, want := range []string{"redis-fixed-window, TTL 1m0s: 1 key", "redis-get-incr, TTL 1m0s: 1 key", "redis-sliding-window, TTL 2m0s: 1 key"} {
		if !strings.Contains(text, want) {
			t.Errorf("dry run does not say %q:\n%s", want, text)
		}
	}
}
