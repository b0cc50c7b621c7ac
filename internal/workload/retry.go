package workload

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// What a retrying client waits for after a denial (RetryPolicy.Honor).
const (
	// HonorRetryAfter waits at least the answer's Retry-After, as RFC 9110
	// and the RateLimit draft ask; an answer without one gets the backoff.
	HonorRetryAfter = "retry-after"
	// HonorReset waits at least until the reset the answer announced
	// (draft 11's effective window t, RateLimit-Reset, X-RateLimit-Reset).
	HonorReset = "ratelimit-reset"
	// HonorFixed ignores the answer and waits the backoff alone.
	HonorFixed = "fixed"
)

// Backoffs: how the wait grows with each retry of one request.
const (
	BackoffExponential = "exponential" // Delay·2^(k−1) for the k-th retry, at most MaxDelay
	BackoffConstant    = "constant"    // Delay every time
)

// Jitters: how a client randomises its wait (the terms of the AWS
// Architecture Blog's "Exponential Backoff and Jitter").
const (
	JitterNone  = "none"  // the backoff B exactly
	JitterFull  = "full"  // uniform in [0, B)
	JitterEqual = "equal" // B/2 plus uniform in [0, B/2)
)

// Defaults of a RetryPolicy's zero fields.
const (
	DefaultRetryDelay    = 100 * time.Millisecond
	DefaultRetryMaxDelay = 10 * time.Second
	DefaultMaxAttempts   = 5
)

// RetryPolicy is how a closed-model client answers a denial, as a client
// library would: it waits, then sends the same request again, up to
// MaxAttempts attempts in all, then gives the request up.
//
// The wait for the k-th retry is the honoured hint (none for HonorFixed,
// or when the answer carried none) plus the jittered backoff: with a hint,
// JitterNone adds nothing (the client comes back exactly when told) and
// the other jitters add their share of B, spreading clients after the
// moment they were told; without a hint the jittered backoff is the whole
// wait. B is Delay·2^(k−1) up to MaxDelay (exponential) or Delay
// (constant).
//
// Example: honor retry-after, exponential from 100ms, full jitter; an
// answer with Retry-After 1s makes the first retry wait between 1s and
// 1.1s, the second (after another Retry-After 1s) between 1s and 1.2s.
type RetryPolicy struct {
	Honor       string
	Backoff     string
	Jitter      string
	Delay       time.Duration
	MaxDelay    time.Duration
	MaxAttempts int
}

// Normalize fills the zero fields with their defaults and checks the
// policy.
func (p RetryPolicy) Normalize() (RetryPolicy, error) {
	if p.Honor == "" {
		p.Honor = HonorRetryAfter
	}
	if p.Backoff == "" {
		p.Backoff = BackoffExponential
	}
	if p.Jitter == "" {
		p.Jitter = JitterNone
	}
	if p.Delay == 0 {
		p.Delay = DefaultRetryDelay
	}
	if p.MaxDelay == 0 {
		p.MaxDelay = max(DefaultRetryMaxDelay, p.Delay)
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	switch {
	case p.Honor != HonorRetryAfter && p.Honor != HonorReset && p.Honor != HonorFixed:
		return p, fmt.Errorf("unknown retry honor %q (want retry-after, ratelimit-reset or fixed)", p.Honor)
	case p.Backoff != BackoffExponential && p.Backoff != BackoffConstant:
		return p, fmt.Errorf("unknown retry backoff %q (want exponential or constant)", p.Backoff)
	case p.Jitter != JitterNone && p.Jitter != JitterFull && p.Jitter != JitterEqual:
		return p, fmt.Errorf("unknown retry jitter %q (want none, full or equal)", p.Jitter)
	case p.Delay < 0 || p.MaxDelay < p.Delay:
		return p, fmt.Errorf("retry delay %s and max delay %s: want 0 <= delay <= max delay", p.Delay, p.MaxDelay)
	case p.MaxAttempts < 1 || p.MaxAttempts > math.MaxUint8:
		return p, fmt.Errorf("retry max attempts %d: want 1 to %d", p.MaxAttempts, math.MaxUint8)
	}
	return p, nil
}

// backoff is B for the k-th retry (k ≥ 1).
func (p RetryPolicy) backoff(k int) time.Duration {
	if p.Backoff == BackoffConstant {
		return p.Delay
	}
	b := p.Delay
	for i := 1; i < k && b < p.MaxDelay; i++ {
		b *= 2
	}
	return min(b, p.MaxDelay)
}

// Hint is what the policy honours in an answer that carried retryAfter
// and reset (negative: absent): one of the two, or -1 when it honours
// neither.
func (p RetryPolicy) Hint(retryAfter, reset time.Duration) time.Duration {
	switch p.Honor {
	case HonorRetryAfter:
		return retryAfter
	case HonorReset:
		return reset
	}
	return -1
}

// Wait is how long a client waits before its k-th retry (k ≥ 1) after an
// answer whose honoured hint is hint (negative: none), with u a uniform
// random number in [0, 1). It is pure, so tests need no clock.
func (p RetryPolicy) Wait(k int, hint time.Duration, u float64) time.Duration {
	b := p.backoff(k)
	var j time.Duration
	switch p.Jitter {
	case JitterFull:
		j = time.Duration(u * float64(b))
	case JitterEqual:
		j = b/2 + time.Duration(u*float64(b/2))
	default:
		j = b
	}
	if hint < 0 {
		return j
	}
	if p.Jitter == JitterNone {
		return hint
	}
	return hint + j
}

// String describes the policy for reports.
func (p RetryPolicy) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "honor %s, ", p.Honor)
	switch p.Backoff {
	case BackoffConstant:
		fmt.Fprintf(&b, "constant backoff %s", p.Delay)
	default:
		fmt.Fprintf(&b, "exponential backoff from %s to %s", p.Delay, p.MaxDelay)
	}
	fmt.Fprintf(&b, ", jitter %s, at most %d attempts", p.Jitter, p.MaxAttempts)
	return b.String()
}
