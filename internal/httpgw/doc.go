// Package httpgw is rlctl's HTTP reference gateway: it serves one simulated
// gateway of a gateway.Set per listener, answering 200 or 429 with
// Retry-After and the RateLimit header fields, and exports Prometheus
// metrics for the signals a limiter must be alerted on (allowed vs denied
// per endpoint, fail-open and fail-closed decisions, decision latency,
// stranded lease budget). Rules returns alerting rules for those metrics.
//
// It gives `verify`'s http target a real server to measure, and users a way
// to try a design behind their own load balancer.
package httpgw
