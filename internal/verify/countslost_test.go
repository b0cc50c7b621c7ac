package verify

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/redistest"
)

// A counts_lost the failover's hook could not read from Redis is missing
// with a note saying why, never missing without a word: here the run's
// Redis user may not SCAN, so the old primary's counters cannot be listed.
func TestCountsLostUnreadSaysWhy(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	if err := srv.Client(t).Do(t.Context(), "ACL", "SETUSER", "noscan", "on", ">pw", "~*", "&*", "+@all", "-scan").Err(); err != nil {
		t.Fatal(err)
	}
	out := run(t, parse(t, fmt.Sprintf(replicateDoc, fmt.Sprintf("redis://noscan:pw@%s", srv.Addr), "")))
	if v, ok := out.Report.Metrics[metric.CountsLost]; ok {
		t.Errorf("counts_lost %g, measured by a user that may not list the counters", v)
	}
	if !slices.ContainsFunc(out.Report.Notes, func(n string) bool {
		return strings.Contains(n, "counts_lost is not measured: the old primary's counters could not be read before the failover") && strings.Contains(n, "scan")
	}) {
		t.Errorf("no note on why counts_lost is missing: %q", out.Report.Notes)
	}
	if slices.ContainsFunc(out.Report.Notes, func(n string) bool { return strings.Contains(n, "counts_lost was read from Redis") }) {
		t.Errorf("a note says counts_lost was read: %q", out.Report.Notes)
	}
}
