package analysis

import (
	"math/rand"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
)

// slipped is a definite count: a limiter that really obeys the envelope is
// never charged with a slip, however its decisions sit inside their
// send/receive intervals; one that admits twice the burst is.
func TestSlippedNeverBlamesACorrectLimiter(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(7))
	l := rate.Limit{Count: 10, Window: time.Second}
	for iter := 0; iter < 200; iter++ {
		for _, capacity := range []float64{10, 20} { // correct, then leaky
			h := history.New(history.Meta{Limit: l, Identities: []string{"a"}, Gateways: []string{"g"}, Endpoints: []string{"e"}}, 400)
			tokens, last := capacity, time.Duration(0)
			at := time.Duration(0)
			for i := 0; i < 300; i++ {
				at += time.Duration(rng.Intn(30)) * time.Millisecond
				tokens = min(capacity, tokens+10*(at-last).Seconds())
				last = at
				out := decision.Denied
				if tokens >= 1 {
					tokens--
					out = decision.Allowed
				}
				// The true decision instant lies somewhere in [sent, recv].
				before := time.Duration(rng.Intn(5000)) * time.Microsecond
				after := time.Duration(rng.Intn(5000)) * time.Microsecond
				h.Append(history.Record{Intended: at - before, Sent: at - before, Received: at + after,
					Decided: history.NoTime, RetryAfter: history.NoTime, Round: history.NoRound,
					Outcome: out, By: decision.ByRedis})
			}
			got := analyzed(t, h, Options{EnvelopeBurst: 10, EnvelopeRate: 10}).Metrics[metric.Slipped]
			if capacity == 10 && got != 0 {
				t.Fatalf("iteration %d: a correct bucket charged with %g slips", iter, got)
			}
			if capacity == 20 && iter == 0 && got == 0 {
				t.Fatalf("a bucket of twice the burst shows no slip")
			}
		}
	}
}
