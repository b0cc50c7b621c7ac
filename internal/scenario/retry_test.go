package scenario_test

import (
	"github.com/rlctl/rlctl/internal/scenario"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/workload"
)

// A retry policy left partly unset gets its defaults (package workload); a
// limit keyed on the source address gives each identity its own address
// unless traffic.sources says otherwise; without target.key the limit is
// keyed on the identity.
func TestRetryAndKeyDefaults(t *testing.T) {
	t.Parallel()
	scs, err := scenario.Parse([]byte(`name: r
limit: 10/1s
target: {algorithm: redis-fixed-window, key: source}
traffic:
  model: closed
  identities: 3
  concurrency: 6
  think: 250ms
  retry: {jitter: full, delay: 200ms}
`), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tr := scs[0].Traffic
	want := workload.RetryPolicy{Honor: workload.HonorRetryAfter, Backoff: workload.BackoffExponential, Jitter: workload.JitterFull,
		Delay: 200 * time.Millisecond, MaxDelay: workload.DefaultRetryMaxDelay, MaxAttempts: workload.DefaultMaxAttempts}
	if tr.Retry == nil || *tr.Retry != want {
		t.Errorf("retry %+v, want %+v", tr.Retry, want)
	}
	if tr.Think != 250*time.Millisecond || scs[0].Target.Sources != 3 || scs[0].Target.Key != scenario.KeySource {
		t.Errorf("think %v sources %d key %q", tr.Think, scs[0].Target.Sources, scs[0].Target.Key)
	}
	scs, err = scenario.Parse([]byte("name: k\nlimit: 1/s\ntarget: {algorithm: redis-gcra}\ntraffic: {rate: 1/s}\n"), "k.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if scs[0].Target.Key != scenario.KeyIdentity || scs[0].Traffic.Retry != nil {
		t.Errorf("defaults: key %q retry %+v", scs[0].Target.Key, scs[0].Traffic.Retry)
	}
}
