package analysis

import (
	"math"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/rate"
)

// req builds a record of identity id sent at sent (seconds) and answered
// 2 ms later; retry fills Attempt, Told and Waited.
type req struct {
	id         uint32
	sent       float64
	outcome    decision.Outcome
	retryAfter float64 // seconds, 0: none
	attempt    uint8
	told       float64 // seconds, -1: told nothing
	waited     float64
}

func secs(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

func retryHistory(reqs ...req) *history.History {
	h := history.New(history.Meta{Scenario: "retries", Limit: rate.Limit{Count: 10, Window: time.Second},
		Identities: []string{"a", "b", "c", "d"}, Gateways: []string{"g"}, Endpoints: []string{"e"}}, len(reqs))
	for _, q := range reqs {
		r := history.Record{
			Intended: secs(q.sent), Sent: secs(q.sent), Received: secs(q.sent) + 2*time.Millisecond,
			Decided: history.NoTime, RetryAfter: history.NoTime, Identity: q.id, Round: history.NoRound,
			Outcome: q.outcome, Attempt: q.attempt,
		}
		if q.retryAfter > 0 {
			r.RetryAfter = secs(q.retryAfter)
		}
		if q.attempt > 0 {
			r.Told, r.Waited = secs(q.told), secs(q.waited)
			if q.told < 0 {
				r.Told = history.NoTime
			}
		}
		h.Append(r)
	}
	return h
}

const (
	ok     = decision.Allowed
	no     = decision.Denied
	failed = decision.Error
)

// Five clients told to come back at t=1s arrive within 100 ms of it, one
// more just after and one before: herd_peak is 5, counted at the reset the
// denial announced, and the arrivals chart holds them in its bins from the
// reset on.
func TestHerdPeakKnownAnswer(t *testing.T) {
	t.Parallel()
	// A denial received at 0.502 s with Retry-After 0.498 s: reset at 1 s.
	// Each retry's previous answer arrived at 0.502 and it was told 0.498.
	var reqs []req
	reqs = append(reqs, req{id: 0, sent: 0.5, outcome: no, retryAfter: 0.498})
	for k, at := range []float64{1.000, 1.020, 1.040, 1.060, 1.080} {
		o := no
		if k < 2 {
			o = ok
		}
		reqs = append(reqs, req{id: 0, sent: at, outcome: o, attempt: 1, told: 0.498, waited: at - 0.502})
	}
	reqs = append(reqs, req{id: 0, sent: 0.99, outcome: no}, req{id: 0, sent: 1.15, outcome: ok})
	// Identity b: a smaller herd of 3 at its own reset (2 s).
	reqs = append(reqs, req{id: 1, sent: 1.5, outcome: no, retryAfter: 0.498})
	for _, at := range []float64{2.0, 2.01, 2.02} {
		reqs = append(reqs, req{id: 1, sent: at, outcome: ok})
	}
	res := analyzed(t, retryHistory(reqs...), Options{})
	if got := res.Metrics[metric.HerdPeak]; got != 5 {
		t.Fatalf("herd_peak = %v, want 5", got)
	}
	if res.HerdAt != time.Second {
		t.Fatalf("herd counted at %v, want the reset at 1s", res.HerdAt)
	}
	sum, retries := 0.0, 0.0
	for j, p := range res.Arrivals {
		if p.At >= 0 && p.At < metric.HerdSpan {
			sum += p.Value
			retries += res.RetryArrivals[j].Value
		}
		if p.At == -10*time.Millisecond && p.Value != 1 {
			t.Errorf("the arrival 10 ms before the reset is missing from bin %v: %v", p.At, p.Value)
		}
	}
	if sum != 5 || retries != 5 {
		t.Errorf("arrivals in the 100 ms after the reset: %v (retries %v), want 5 and 5", sum, retries)
	}
}

// Four answered retries, three denied again: relimited is 0.75. A retry
// that got no answer and every first attempt are left out.
func TestRelimitedKnownAnswer(t *testing.T) {
	t.Parallel()
	res := analyzed(t, retryHistory(
		req{id: 0, sent: 0.1, outcome: no, retryAfter: 0.1},
		req{id: 0, sent: 0.2, outcome: no, attempt: 1, told: 0.1, waited: 0.098},
		req{id: 0, sent: 0.3, outcome: no, attempt: 2, told: 0.1, waited: 0.098},
		req{id: 1, sent: 0.4, outcome: no, attempt: 1, told: -1, waited: 0.2},
		req{id: 1, sent: 0.6, outcome: ok, attempt: 2, told: -1, waited: 0.198},
		req{id: 2, sent: 0.7, outcome: failed, attempt: 1, told: -1, waited: 0.1},
		req{id: 3, sent: 0.8, outcome: ok},
		req{id: 3, sent: 0.9, outcome: no},
	), Options{})
	if got := res.Metrics[metric.Relimited]; got != 0.75 {
		t.Fatalf("relimited = %v, want 0.75", got)
	}
}

// A retry admitted 398 ms after another client of its identity was
// admitted (following the retry's denial) waited 398 ms too long; one
// whose own admission was the first after its denial waited none too long:
// retry_wait_excess is their mean, 199 ms.
func TestRetryWaitExcessKnownAnswer(t *testing.T) {
	t.Parallel()
	res := analyzed(t, retryHistory(
		req{id: 0, sent: 0.998, outcome: no, retryAfter: 0.6}, // answered at 1.000
		req{id: 0, sent: 1.100, outcome: ok},                  // answered at 1.102: the quota was back
		req{id: 0, sent: 1.500, outcome: ok, attempt: 1, told: 0.5, waited: 0.5},
		req{id: 1, sent: 2.798, outcome: no, retryAfter: 0.2},
		req{id: 1, sent: 3.000, outcome: ok, attempt: 1, told: 0.2, waited: 0.2},
	), Options{})
	got := res.Metrics[metric.RetryWaitExcess]
	if math.Abs(got-199) > 1e-6 {
		t.Fatalf("retry_wait_excess_ms = %v, want 199", got)
	}
}

// Of three retries that waited exactly what they were told, one was
// denied with nothing of its identity admitted since its denial (the hint
// was early), one was denied after another client took the freed quota
// (contention, not a lie) and one was admitted; a fourth that waited
// longer than told does not count: retry_after_early is 1/3.
func TestRetryAfterEarlyKnownAnswer(t *testing.T) {
	t.Parallel()
	res := analyzed(t, retryHistory(
		// a: denied at 1.0 s and told 0.5 s, back at 1.5 s, denied again;
		// nobody admitted in between.
		req{id: 0, sent: 0.998, outcome: no, retryAfter: 0.5},
		req{id: 0, sent: 1.500, outcome: no, attempt: 1, told: 0.5, waited: 0.5},
		// b: told 0.5 s at 1.0 s; another client admitted at 1.5 s first.
		req{id: 1, sent: 0.998, outcome: no, retryAfter: 0.5},
		req{id: 1, sent: 1.499, outcome: ok},
		req{id: 1, sent: 1.501, outcome: no, attempt: 1, told: 0.5, waited: 0.501},
		// c: told 0.5 s, back exactly then, admitted.
		req{id: 2, sent: 1.500, outcome: ok, attempt: 1, told: 0.5, waited: 0.5},
		// d: told 0.5 s, came back 300 ms late and was denied: not exact.
		req{id: 3, sent: 1.800, outcome: no, attempt: 1, told: 0.5, waited: 0.8},
	), Options{})
	if got := res.Metrics[metric.RetryAfterEarly]; math.Abs(got-1.0/3) > 1e-9 {
		t.Fatalf("retry_after_early = %v, want 1/3", got)
	}
}

// Without retries none of the retry figures applies: they are absent.
func TestRetryFiguresAbsentWithoutRetries(t *testing.T) {
	t.Parallel()
	res := analyzed(t, retryHistory(req{id: 0, sent: 0.1, outcome: no, retryAfter: 1}, req{id: 0, sent: 0.2, outcome: ok}), Options{})
	for _, m := range []string{metric.HerdPeak, metric.Relimited, metric.RetryWaitExcess, metric.RetryAfterEarly} {
		if v, ok := res.Metrics[m]; ok {
			t.Errorf("%s = %v in a run without retries", m, v)
		}
	}
	if len(res.Arrivals) != 0 {
		t.Error("an arrivals chart without retries")
	}
}
