package httpgw

import (
	"fmt"
	"io"
	"math"
	"time"
)

// RulesOptions tune the alerting rules.
type RulesOptions struct {
	// SlowP99 is the decision latency p99 that pages (default 50ms).
	SlowP99 time.Duration
	// For is how long a condition must hold before it fires (default 5m).
	For time.Duration
}

// Rules writes Prometheus alerting rules for the gateway's metrics: the
// alerts a Redis-backed limiter needs so that it cannot fail open silently.
func Rules(w io.Writer, o RulesOptions) error {
	if o.SlowP99 <= 0 {
		o.SlowP99 = 50 * time.Millisecond
	}
	if o.For <= 0 {
		o.For = 5 * time.Minute
	}
	_, err := fmt.Fprintf(w, `groups:
  - name: rlctl-rate-limiter
    rules:
      - alert: RateLimiterFailingOpen
        # Requests admitted with no limit because Redis failed: the limit is
        # gone exactly when load is high. Page on any sustained fail-open.
        expr: sum by (endpoint) (rate(rlctl_gateway_requests_total{by="fail-open"}[5m])) > 0
        for: %[2]s
        labels: {severity: page}
        annotations:
          summary: "Rate limiter failing open on {{ $labels.endpoint }}"
      - alert: RateLimiterFailingClosed
        # Requests refused because Redis failed: a Redis problem has become
        # an outage for this endpoint.
        expr: sum by (endpoint) (rate(rlctl_gateway_requests_total{by="fail-closed"}[5m])) > 0
        for: %[2]s
        labels: {severity: page}
        annotations:
          summary: "Rate limiter failing closed on {{ $labels.endpoint }}"
      - alert: RateLimiterRedisSlow
        # Every decision pays this latency on the request path.
        expr: histogram_quantile(0.99, sum by (le, endpoint) (rate(rlctl_gateway_decision_seconds_bucket[5m]))) > %[1]g
        for: %[2]s
        labels: {severity: warn}
        annotations:
          summary: "Limiter decision p99 above %[3]s on {{ $labels.endpoint }}"
      - alert: RateLimiterNoDecision
        expr: rate(rlctl_gateway_decision_errors_total[5m]) > 0
        for: %[2]s
        labels: {severity: page}
        annotations:
          summary: "Limiter reaching no decision (503s)"
      - alert: RateLimiterDeniedSpike
        # Real traffic eating 429s, or one client hammering: look before
        # raising the limit.
        expr: sum by (endpoint) (rate(rlctl_gateway_requests_total{outcome="denied"}[5m])) / sum by (endpoint) (rate(rlctl_gateway_requests_total[5m])) > 0.2
        for: %[2]s
        labels: {severity: warn}
        annotations:
          summary: "More than 20%% of {{ $labels.endpoint }} requests denied"
      - alert: RateLimiterStrandedLease
        # Lease budget held by dead gateways until its window ends.
        expr: rlctl_gateway_lease_stranded > 0
        for: %[2]s
        labels: {severity: warn}
        annotations:
          summary: "Lease budget stranded on gateways that died"
`, o.SlowP99.Seconds(), promDuration(o.For), o.SlowP99)
	return err
}

func promDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", int64(math.Ceil(d.Seconds())))
}
