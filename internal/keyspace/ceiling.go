package keyspace

import (
	"fmt"
	"math"

	"github.com/rlctl/rlctl/internal/ceiling"
	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/rate"
)

// Ceiling is the simple theory of what a deployment really admits in one
// window, beside what it publishes. The JSON form is stable.
type Ceiling struct {
	Algorithm string `json:"algorithm"`
	Published int64  `json:"published"`
	WindowMs  int64  `json:"window_ms"`
	Gateways  int    `json:"gateways"`
	// True is the most one identity can get through in any window of
	// length W under this design, by the simple theory.
	True int64 `json:"true"`
	// Ratio is True / Published.
	Ratio float64 `json:"ratio"`
	// Why explains the figure.
	Why string `json:"why"`
}

// TrueCeiling is the design's worst case from internal/ceiling (the same
// theory `rlctl ceiling` prints), in audit's terms: the most one identity
// can get through in any window of length W. lease is the leasing slice
// (0: the design's default). It is theory, not a measurement: `rlctl
// verify` measures.
func TrueCeiling(alg string, published rate.Limit, gateways int, lease int64) (Ceiling, error) {
	if published.Count <= 0 {
		return Ceiling{}, fmt.Errorf("true ceiling: a published limit is needed")
	}
	gateways = max(gateways, 1)
	th, err := ceiling.Of(alg, ceiling.Params{Limit: published, Gateways: gateways, Lease: lease})
	if err != nil {
		return Ceiling{}, fmt.Errorf("true ceiling: %w (known: %v)", err, design.Names())
	}
	c := Ceiling{Algorithm: alg, Published: published.Count, WindowMs: published.Window.Milliseconds(),
		Gateways: gateways, True: int64(math.Ceil(th.Ceiling)), Why: th.Why}
	c.Ratio = float64(c.True) / float64(published.Count)
	return c, nil
}
