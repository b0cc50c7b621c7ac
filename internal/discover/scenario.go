package discover

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// HTTPTarget is how the discovered endpoint was reached, written into
// the scenario's http target as it was given.
type HTTPTarget struct {
	URLs           []string
	Method         string
	IdentityHeader string
	IdentityQuery  string
	IdentitySource string
	Headers        map[string]string
	Body           string
	RequestTimeout time.Duration
	// TLS files, as paths the scenario can name.
	TLSCA, TLSCert, TLSKey string
	TLSSkipVerify          bool
}

// ErrNoScenario is a policy no scenario can pin: none found, or a class
// verify does not measure (concurrency).
var ErrNoScenario = errors.New("no scenario for this policy")

type scIdentity struct {
	Header string `yaml:"header,omitempty"`
	Query  string `yaml:"query,omitempty"`
	Source string `yaml:"source,omitempty"`
}

type scTLS struct {
	CA                 string `yaml:"ca,omitempty"`
	Cert               string `yaml:"cert,omitempty"`
	Key                string `yaml:"key,omitempty"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify,omitempty"`
}

type scTarget struct {
	Kind           string            `yaml:"kind"`
	URLs           []string          `yaml:"urls"`
	Method         string            `yaml:"method,omitempty"`
	Identity       *scIdentity       `yaml:"identity,omitempty"`
	Headers        map[string]string `yaml:"headers,omitempty"`
	Body           string            `yaml:"body,omitempty"`
	DeniedStatus   []int             `yaml:"denied_status,omitempty"`
	RequestTimeout string            `yaml:"request_timeout,omitempty"`
	TLS            *scTLS            `yaml:"tls,omitempty"`
}

type scTraffic struct {
	Pattern    string `yaml:"pattern"`
	Rate       string `yaml:"rate"`
	Duration   string `yaml:"duration"`
	Identities int    `yaml:"identities"`
}

type scFile struct {
	Name        string    `yaml:"name"`
	Description string    `yaml:"description"`
	Limit       string    `yaml:"limit"`
	Target      scTarget  `yaml:"target"`
	Traffic     scTraffic `yaml:"traffic"`
	Thresholds  []string  `yaml:"thresholds"`
}

// Scenario writes a scenario that verifies the discovered policy against
// the same target: steady overload of one identity, and thresholds that
// pass for the policy found and fail for one twice as loose (or half as
// tight), so CI can pin what the deployment enforces today.
func Scenario(res *Result, t HTTPTarget) ([]byte, error) {
	p := res.Policy
	if !res.Found {
		return nil, fmt.Errorf("%w: %s", ErrNoScenario, res.Summary)
	}
	f := scFile{
		Name:   "discovered-" + p.Algorithm,
		Target: scTarget{Kind: "http", URLs: t.URLs, Method: t.Method, Headers: t.Headers, Body: t.Body},
	}
	if t.IdentityHeader != "" || t.IdentityQuery != "" || t.IdentitySource != "" {
		f.Target.Identity = &scIdentity{Header: t.IdentityHeader, Query: t.IdentityQuery, Source: t.IdentitySource}
	}
	if p.DeniedStatus != 0 && p.DeniedStatus != 429 {
		f.Target.DeniedStatus = []int{p.DeniedStatus}
	}
	if t.RequestTimeout > 0 {
		f.Target.RequestTimeout = t.RequestTimeout.String()
	}
	if t.TLSCA != "" || t.TLSCert != "" || t.TLSKey != "" || t.TLSSkipVerify {
		f.Target.TLS = &scTLS{CA: t.TLSCA, Cert: t.TLSCert, Key: t.TLSKey, InsecureSkipVerify: t.TLSSkipVerify}
	}
	w := p.Window()
	var offered float64 // requests per second
	var dur time.Duration
	switch p.Algorithm {
	case FixedWindow, SlidingLog, SlidingWindow:
		if p.Limit <= 0 || w <= 0 {
			return nil, fmt.Errorf("%w: the window was not measured", ErrNoScenario)
		}
		f.Limit = fmt.Sprintf("%d/%v", p.Limit, w)
		offered = 3 * float64(p.Limit) / w.Seconds()
		dur = max(3*w, 3*time.Second)
		switch {
		case p.DenialsCount != nil && *p.DenialsCount:
			f.Description = fmt.Sprintf("Discovered: a fixed window of %d per %v that every request, denied ones too, restarts: one identity under steady load gets one quota, never a second.", p.Limit, w)
			f.Thresholds = []string{"allowed < 2*limit", "allowed >= 0.9*limit"}
		case p.Algorithm == FixedWindow:
			f.Description = fmt.Sprintf("Discovered: a fixed window of %d per %v (%s aligned). A sliding %v may hold up to 2L across a boundary; a doubled limit would exceed it.", p.Limit, w, p.Aligned, w)
			f.Thresholds = []string{"ceiling <= 2*limit"}
		case p.Algorithm == SlidingLog:
			f.Description = fmt.Sprintf("Discovered: a sliding log of %d per %v: no span of %v holds more.", p.Limit, w, w)
			// A window measured up to 10% long lets its span hold that much
			// more of a true log's admissions, and one more at its edge.
			f.Thresholds = []string{fmt.Sprintf("ceiling <= %s", num(math.Ceil(1.1*float64(p.Limit))+1))}
		default:
			f.Description = fmt.Sprintf("Discovered: a sliding-window counter of %d per %v, whose weighted estimate lets a span of %v hold more than L (up to about 1.6L measured under steady overload), never the 2L of many gateways each with its own.", p.Limit, w, w)
			f.Thresholds = []string{"ceiling <= 2*limit"}
		}
		if p.DenialsCount == nil || !*p.DenialsCount {
			// Under steady overload every class of window admits about L
			// per W: a limit doubled or halved shows in the rate.
			perS := float64(p.Limit) / w.Seconds()
			f.Thresholds = append(f.Thresholds, fmt.Sprintf("sustained_rate <= %s", num(1.2*perS)), fmt.Sprintf("sustained_rate >= %s", num(0.8*perS)))
		}
	case TokenBucket, LeakyBucket:
		if p.RatePerS <= 0 {
			return nil, fmt.Errorf("%w: the rate was not measured", ErrNoScenario)
		}
		// verify's sustained_rate leaves out the limit's first window when
		// the run lasts two: a window long enough to spend the burst in
		// (and to hold ten refills) leaves the refill alone after it.
		secs := math.Ceil(max(10/p.RatePerS, p.Burst/p.RatePerS, 1))
		f.Limit = fmt.Sprintf("%d/%ds", max(1, int64(math.Round(p.RatePerS*secs))), int64(secs))
		offered = 3 * p.RatePerS
		dur = max(time.Duration(4*secs)*time.Second, 4*time.Second)
		f.Description = fmt.Sprintf("Discovered: a %s refilled at %.4g/s with a burst of %.4g: the envelope one identity gets under steady overload.", p.Algorithm, p.RatePerS, p.Burst)
		f.Thresholds = []string{
			fmt.Sprintf("sustained_rate <= %s", num(1.15*p.RatePerS)),
			fmt.Sprintf("sustained_rate >= %s", num(0.85*p.RatePerS)),
		}
		if p.Algorithm == TokenBucket {
			f.Thresholds = append(f.Thresholds, fmt.Sprintf("burst <= %s", num(math.Ceil(1.2*p.Burst)+1)))
		}
	default:
		return nil, fmt.Errorf("%w: verify has no figure that pins a %s policy", ErrNoScenario, p.Algorithm)
	}
	f.Traffic = scTraffic{Pattern: "constant", Rate: offeredRate(offered), Duration: dur.Round(time.Second).String(), Identities: 1}
	var b strings.Builder
	b.WriteString("# Written by rlctl discover: " + res.Summary + "\n")
	b.WriteString("# Run it with: rlctl verify THIS_FILE (exit 1 when the policy changed)\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

// offeredRate is a rate of requests per second as N/1s (whole N).
func offeredRate(r float64) string {
	if r >= 1 {
		return fmt.Sprintf("%d/1s", int64(math.Ceil(r)))
	}
	return fmt.Sprintf("%d/1m", max(1, int64(math.Ceil(60*r))))
}

// num prints a bound with at most two decimals.
func num(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}
