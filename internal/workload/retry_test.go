package workload

import (
	"testing"
	"time"
)

func TestRetryPolicyWait(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	pol := func(honor, backoff, jitter string) RetryPolicy {
		p, err := RetryPolicy{Honor: honor, Backoff: backoff, Jitter: jitter, Delay: 100 * ms, MaxDelay: 350 * ms}.Normalize()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		p    RetryPolicy
		k    int
		hint time.Duration
		u    float64
		want time.Duration
	}{
		{"told, no jitter: exactly the hint", pol(HonorRetryAfter, "", JitterNone), 3, 700 * ms, 0.9, 700 * ms},
		{"told, full jitter: hint plus a share of B", pol(HonorRetryAfter, "", JitterFull), 1, 700 * ms, 0.5, 750 * ms},
		{"told, full jitter, second retry: B doubled", pol(HonorRetryAfter, "", JitterFull), 2, 700 * ms, 0.5, 800 * ms},
		{"told, equal jitter: hint plus B/2 and a share of B/2", pol(HonorRetryAfter, "", JitterEqual), 1, time.Second, 0.5, time.Second + 75*ms},
		{"not told: the backoff", pol(HonorRetryAfter, "", JitterNone), 1, -1, 0.3, 100 * ms},
		{"exponential doubles", pol(HonorFixed, "", JitterNone), 3, 5 * time.Second, 0, 350 * ms}, // 400ms capped at 350ms
		{"exponential second retry", pol(HonorFixed, "", JitterNone), 2, -1, 0, 200 * ms},
		{"constant stays", pol(HonorFixed, BackoffConstant, JitterNone), 4, -1, 0, 100 * ms},
		{"full jitter without a hint: from zero", pol(HonorFixed, "", JitterFull), 1, -1, 0.25, 25 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hint := tt.hint
			if tt.p.Honor == HonorFixed {
				hint = tt.p.Hint(tt.hint, tt.hint)
			}
			if got := tt.p.Wait(tt.k, hint, tt.u); got != tt.want {
				t.Errorf("Wait(%d, %v, %v) = %v, want %v", tt.k, hint, tt.u, got, tt.want)
			}
		})
	}
	if got := pol(HonorReset, "", "").Hint(2*time.Second, 5*time.Second); got != 5*time.Second {
		t.Errorf("ratelimit-reset honours %v, want the reset", got)
	}
	if got := pol(HonorRetryAfter, "", "").Hint(2*time.Second, 5*time.Second); got != 2*time.Second {
		t.Errorf("retry-after honours %v, want Retry-After", got)
	}
	for _, bad := range []RetryPolicy{{Honor: "never"}, {Jitter: "some"}, {Backoff: "linear"}, {MaxAttempts: 300}, {Delay: time.Second, MaxDelay: time.Millisecond}} {
		if _, err := bad.Normalize(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
