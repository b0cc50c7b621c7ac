package httpgw

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/dunglas/httpsfv"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/gateway"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/rate"
)

// Options configure the handlers.
type Options struct {
	Decider gateway.Decider
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
	// Fields is the shape of the rate-limit header fields: FieldsDraft11
	// (the default) or FieldsDraft06 for older clients.
	Fields string
	// Policies names each endpoint's quota policy in the draft-11 fields,
	// by endpoint index; a missing or empty name is the endpoint's own.
	Policies []string
}

// The shapes of the rate-limit header fields a gateway can answer with.
const (
	// FieldsDraft11 is draft-ietf-httpapi-ratelimit-headers-11: Structured
	// Field lists naming the endpoint's policy,
	// RateLimit-Policy: "default";q=20;w=1 and RateLimit: "default";r=0;t=1.
	FieldsDraft11 = "draft-11"
	// FieldsDraft06 is the older shape many clients still read:
	// RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset and
	// RateLimit-Policy: 20;w=1.
	FieldsDraft06 = "draft-06"
)

// Check reports what makes o unusable: an unknown Fields shape, or a
// policy name a Structured Field String cannot carry (printable ASCII
// only).
func (o Options) Check() error {
	switch o.Fields {
	case "", FieldsDraft11, FieldsDraft06:
	default:
		return fmt.Errorf("rate-limit fields %q: want %s or %s", o.Fields, FieldsDraft11, FieldsDraft06)
	}
	for i, e := range o.Decider.Endpoints() {
		if err := CheckPolicyName(o.policy(i, e)); err != nil {
			return fmt.Errorf("endpoint %q: %w", e, err)
		}
	}
	return nil
}

// CheckPolicyName reports why name cannot name a draft-11 policy: a
// Structured Field String holds printable ASCII only.
func CheckPolicyName(name string) error {
	if _, err := policyItem(name); err != nil {
		return fmt.Errorf("policy name %q: want printable ASCII (a Structured Field String): %w", name, err)
	}
	return nil
}

// policy is endpoint i's policy name.
func (o Options) policy(i int, endpoint string) string {
	if i < len(o.Policies) && o.Policies[i] != "" {
		return o.Policies[i]
	}
	return endpoint
}

// policyItem serializes a policy name as a Structured Field String item.
func policyItem(name string) (string, error) {
	return httpsfv.Marshal(httpsfv.NewItem(name))
}

// limitFields are one endpoint's precomputed rate-limit header values.
type limitFields struct {
	draft11 bool
	policy  string // RateLimit-Policy, either shape
	name    string // draft 11: the policy name as a serialized String
	limit   string // draft 06: RateLimit-Limit
}

func newLimitFields(o Options, i int, endpoint string) limitFields {
	f := limitFields{draft11: o.Fields != FieldsDraft06, limit: strconv.FormatInt(o.Limit.Count, 10)}
	secs := int64(math.Ceil(o.Limit.Window.Seconds()))
	if !f.draft11 {
		f.policy = fmt.Sprintf("%d;w=%d", o.Limit.Count, secs)
		return f
	}
	f.name, _ = policyItem(o.policy(i, endpoint)) // Check refused what fails
	f.policy = f.name + ";q=" + f.limit
	// w is whole seconds ("sub-second precision is not supported"): a
	// window that is not is left out rather than misstated.
	if w := o.Limit.Window; w > 0 && w%time.Second == 0 {
		f.policy += ";w=" + strconv.FormatInt(secs, 10)
	}
	return f
}

// set writes the fields of decision d: draft 11's RateLimit carries the
// available quota r and the effective window t (seconds, rounded up: on a
// denial the time until the next request can pass, which Retry-After then
// equals; otherwise until the whole quota is back); draft 06 the limit,
// remaining and reset.
func (f *limitFields) set(h http.Header, d limiter.Decision) {
	h.Set("RateLimit-Policy", f.policy)
	if !f.draft11 {
		h.Set("RateLimit-Limit", f.limit)
		if d.Remaining >= 0 {
			h.Set("RateLimit-Remaining", strconv.FormatInt(d.Remaining, 10))
		}
		if d.Reset > 0 {
			h.Set("RateLimit-Reset", strconv.FormatInt(ceilSeconds(d.Reset), 10))
		}
		return
	}
	if d.Remaining < 0 {
		return // r is required: a design that cannot say sends no RateLimit
	}
	v := f.name + ";r=" + strconv.FormatInt(d.Remaining, 10)
	t := d.Reset
	if !d.Allowed {
		t = d.RetryAfter
	}
	if t > 0 || !d.Allowed {
		v += ";t=" + strconv.FormatInt(retrySeconds(d, t), 10)
	}
	h.Set("RateLimit", v)
}

// retrySeconds rounds t up to whole seconds; a denial says at least 1, as
// Retry-After does, so a client that obeys it is never early.
func retrySeconds(d limiter.Decision, t time.Duration) int64 {
	if d.Allowed {
		return ceilSeconds(t)
	}
	return max(ceilSeconds(t), 1)
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
	fields := make([]limitFields, len(eps))
	for i, e := range eps {
		fields[i] = newLimitFields(o, i, e)
	}
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
		fields[ep].set(h, d)
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
			h.Set("Retry-After", strconv.FormatInt(retrySeconds(d, d.RetryAfter), 10))
		}
		m.requests.WithLabelValues(gwName, eps[ep], outcome.String(), d.By.String()).Inc()
		w.WriteHeader(status)
		fmt.Fprintf(w, "%s\n", outcome)
	})
}

func ceilSeconds(d time.Duration) int64 {
	return int64(math.Ceil(d.Seconds()))
}
