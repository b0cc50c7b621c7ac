package httpgw

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/gateway"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/rate"
)

// Decider is what the gateway asks: gateway.Set satisfies it.
type Decider interface {
	Decide(ctx context.Context, gateway, endpoint int, id string) (limiter.Decision, error)
	Endpoints() []string
	Stats() gateway.Stats
}

// Options configure the handlers.
type Options struct {
	Decider Decider
	Limit   rate.Limit
	// IdentityHeader names the header carrying the identity (default
	// X-API-Key); IdentityQuery, when set, a query parameter tried first.
	IdentityHeader string
	IdentityQuery  string
	// MaxIdentity is the longest identity accepted, in bytes (0 means
	// DefaultMaxIdentity). The identity becomes part of a Redis key, so a
	// longer one is refused before it reaches Redis.
	MaxIdentity int
	// Registry receives the metrics; nil makes a new one.
	Registry *prometheus.Registry
}

// DefaultMaxIdentity is the longest identity a gateway accepts unless told
// otherwise: room for any API key, user id or address, far from the
// megabytes a hostile client could send to fill Redis.
const DefaultMaxIdentity = 256

// checkIdentity says why id cannot key a limit, or "" when it can: it must
// be present, at most max bytes, and free of control characters, which no
// real identity holds and which garble logs and redis-cli output.
func checkIdentity(id string, max int) string {
	if len(id) > max {
		return fmt.Sprintf("identity too long: %d bytes, at most %d allowed", len(id), max)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c == 0x7f {
			return fmt.Sprintf("identity holds a control character (byte %d is 0x%02x)", i, c)
		}
	}
	return ""
}

// Metrics are the gateway's Prometheus collectors, shared by every
// gateway of one process.
type Metrics struct {
	registry  *prometheus.Registry
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	errors    prometheus.Counter
	leaseGone prometheus.GaugeFunc
	leaseLeft prometheus.GaugeFunc
}

// NewMetrics registers the collectors.
func NewMetrics(o Options) *Metrics {
	reg := o.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rlctl_gateway_requests_total",
			Help: "Limiter decisions by endpoint, outcome (allowed, denied) and the path that decided (redis, local, fail-open, fail-closed, fallback, lease).",
		}, []string{"gateway", "endpoint", "outcome", "by"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rlctl_gateway_decision_seconds",
			Help:    "Time to reach a limiter decision, including the Redis round trip.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"endpoint"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rlctl_gateway_decision_errors_total",
			Help: "Requests for which the limiter reached no decision at all.",
		}),
	}
	d := o.Decider
	m.leaseGone = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "rlctl_gateway_lease_stranded",
		Help: "Lease budget held by gateways that died, stranded until its window ends.",
	}, func() float64 { return float64(d.Stats().LeaseStranded) })
	m.leaseLeft = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "rlctl_gateway_lease_unspent",
		Help: "Lease budget granted to gateways and not (yet) spent.",
	}, func() float64 { return float64(d.Stats().LeaseUnspent) })
	reg.MustRegister(m.requests, m.latency, m.errors, m.leaseGone, m.leaseLeft)
	return m
}

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// Handler returns the HTTP handler of gateway gw: any path is a rate
// limited request; the first path segment selects the endpoint when it
// names one (/login, /feed), else the first endpoint answers. /metrics is
// served by the caller.
func Handler(o Options, m *Metrics, gw int) http.Handler {
	header := o.IdentityHeader
	if header == "" {
		header = "X-API-Key"
	}
	eps := o.Decider.Endpoints()
	index := map[string]int{}
	for i, e := range eps {
		index["/"+e] = i
	}
	maxID := o.MaxIdentity
	if maxID <= 0 {
		maxID = DefaultMaxIdentity
	}
	missing := "missing identity: send the " + header + " header"
	if o.IdentityQuery != "" {
		missing = "missing identity: send the " + o.IdentityQuery + " query parameter or the " + header + " header"
	}
	gwName := strconv.Itoa(gw)
	policy := fmt.Sprintf("%d;w=%d", o.Limit.Count, int64(math.Ceil(o.Limit.Window.Seconds())))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := ""
		if o.IdentityQuery != "" {
			id = r.URL.Query().Get(o.IdentityQuery)
		}
		if id == "" {
			id = r.Header.Get(header)
		}
		if id == "" {
			http.Error(w, missing, http.StatusBadRequest)
			return
		}
		if why := checkIdentity(id, maxID); why != "" {
			http.Error(w, why, http.StatusBadRequest)
			return
		}
		ep := 0
		if i, ok := index[r.URL.Path]; ok {
			ep = i
		}
		start := time.Now()
		d, err := o.Decider.Decide(r.Context(), gw, ep, id)
		m.latency.WithLabelValues(eps[ep]).Observe(time.Since(start).Seconds())
		if err != nil {
			m.errors.Inc()
			http.Error(w, "rate limiter unavailable", http.StatusServiceUnavailable)
			return
		}
		h := w.Header()
		h.Set("RateLimit-Policy", policy)
		h.Set("RateLimit-Limit", strconv.FormatInt(o.Limit.Count, 10))
		if d.Remaining >= 0 {
			h.Set("RateLimit-Remaining", strconv.FormatInt(d.Remaining, 10))
		}
		if d.Reset > 0 {
			h.Set("RateLimit-Reset", strconv.FormatInt(ceilSeconds(d.Reset), 10))
		}
		if by := d.By.String(); by != "" {
			h.Set(decision.DecidedByHeader, by)
		}
		if !d.ServerTime.IsZero() {
			// A client measuring this gateway (rlctl verify) then knows the
			// decision's instant, not only that it fell between send and
			// receive.
			h.Set(decision.DecidedAtHeader, decision.FormatDecidedAt(d.ServerTime))
		}
		outcome := decision.Allowed
		status := http.StatusOK
		if !d.Allowed {
			outcome, status = decision.Denied, http.StatusTooManyRequests
			// Retry-After is whole seconds (RFC 9110); round up so a client
			// that obeys it is never early.
			h.Set("Retry-After", strconv.FormatInt(max(ceilSeconds(d.RetryAfter), 1), 10))
		}
		m.requests.WithLabelValues(gwName, eps[ep], outcome.String(), d.By.String()).Inc()
		w.WriteHeader(status)
		fmt.Fprintf(w, "%s\n", outcome)
	})
}

func ceilSeconds(d time.Duration) int64 {
	return int64(math.Ceil(d.Seconds()))
}
