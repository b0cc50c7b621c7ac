package traffic

import (
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/workload"
)

// A closed plan that does not say its concurrency keeps one request in
// flight per gateway and identity, the default scenario files document.
func TestClosedConcurrencyDefault(t *testing.T) {
	t.Parallel()
	p, err := Plan{Model: workload.ModelClosed, Duration: time.Second, MaxRequests: 10, Identities: 3}.normalize(history.Meta{}, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.Concurrency != 6 {
		t.Errorf("concurrency %d, want 2 gateways × 3 identities", p.Concurrency)
	}
}
