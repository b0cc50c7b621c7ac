package httptarget

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/redact"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/suggest"
)

// Defaults of an http target's own fields.
const (
	DefaultMethod = "GET"
	// DefaultRequestTimeout is request_timeout's default: seconds, since a
	// real gateway's answer crosses a network (Redis's 50ms would count a
	// gateway answering in 60ms as lost).
	DefaultRequestTimeout = 5 * time.Second
	DefaultIDHeader       = "X-API-Key"
)

// idPlaceholder stands for the identity in urls, headers and body.
const idPlaceholder = "{id}"

// Config is an http target's part of a scenario's target section.
type Config struct {
	URLs     []string
	Method   string
	Identity Identity
	// Headers and Body are templates: {id} stands for the identity.
	Headers      map[string]string
	Body         string
	DeniedStatus []int
	// RequestTimeout bounds one request, from dialing to the end of its
	// answer: a network's time, not a Redis call's.
	RequestTimeout time.Duration
	// TLS configures https:// gateways: a CA to trust, a client
	// certificate, or no verification at all.
	TLS TLSFiles
	// ShowQuery names the query parameters of URLs whose values reports,
	// histories and messages may show; every other query value is shown
	// as xxxxx (the identity parameter's value, an identity name, is shown
	// too). See ShownURL.
	ShowQuery []string
	// Redact names query parameters whose values are never shown. Every
	// value is hidden unless ShowQuery names it, so what Redact adds is a
	// guard: a name in both is an error.
	Redact []string
	// Schema names the key layout the gateways keep their counters in (a
	// keys --schema name); Pattern, with {id}, is a custom one. Either lets
	// rlctl read the run identities' counters in target.redis.
	Schema, Pattern string
	// Toxiproxy names the Toxiproxy API and proxy through which the
	// gateways reach their Redis, for network faults.
	Toxiproxy Toxiproxy
}

// Identity says how a request carries its identity: in a header or a query
// parameter (at most one of the two), and/or as the source address of its
// connections, one address per identity from the prefix Source.
type Identity struct {
	Header string
	Query  string
	Source string
}

// Toxiproxy is a Toxiproxy API (http://host:port) and the name of the
// proxy on it that stands between the gateways and their Redis.
type Toxiproxy struct {
	API, Proxy string
}

// Set reports whether a Toxiproxy was named.
func (t Toxiproxy) Set() bool { return t.API != "" || t.Proxy != "" }

// TLSFiles are an http target's TLS settings. CA, Cert and Key are paths,
// resolved relative to the scenario file; their PEM contents are read at
// load time (CAPEM, CertPEM, KeyPEM), so a missing or malformed file is a
// load error naming the field.
type TLSFiles struct {
	CA, Cert, Key          string
	CAPEM, CertPEM, KeyPEM []byte
	// InsecureSkipVerify trusts any certificate (a test gateway's
	// self-signed one, say).
	InsecureSkipVerify bool
}

// Set reports whether any TLS setting was given.
func (f TLSFiles) Set() bool {
	return f.CA != "" || f.Cert != "" || f.Key != "" || f.InsecureSkipVerify
}

// ConfigOf is t's http section; the zero Config when t is of another kind.
func ConfigOf(t scenario.Target) *Config { return scenario.ConfigAs[Config](t) }

// section is the http kind's part of the scenario format.
var section = scenario.Section{
	Kind:   scenario.KindHTTP,
	Doc:    "your real gateways, reached at target.urls; denials are the statuses in denied_status",
	Remote: true,
	New:    func() any { return &Config{} },
	Fields: func(d scenario.Decoder, _ *scenario.Target, v any) map[string]scenario.Handler {
		c := v.(*Config)
		return map[string]scenario.Handler{
			"schema":  d.String(&c.Schema),
			"pattern": d.String(&c.Pattern),
			"toxiproxy": d.Mapping(map[string]scenario.Handler{
				"api":   d.String(&c.Toxiproxy.API),
				"proxy": d.String(&c.Toxiproxy.Proxy),
			}),
			"urls":            d.Strings(&c.URLs),
			"request_timeout": d.Duration(&c.RequestTimeout),
			"redact":          d.Strings(&c.Redact),
			"show_query":      d.Strings(&c.ShowQuery),
			"method":          d.String(&c.Method),
			"identity": d.Mapping(map[string]scenario.Handler{
				"header": d.String(&c.Identity.Header),
				"query":  d.String(&c.Identity.Query),
				"source": d.String(&c.Identity.Source),
			}),
			"headers":       d.StringMap(&c.Headers),
			"body":          d.String(&c.Body),
			"denied_status": d.Ints(&c.DeniedStatus, 100, 599, "an HTTP status"),
			"tls": d.Mapping(map[string]scenario.Handler{
				"ca":                   d.String(&c.TLS.CA),
				"cert":                 d.String(&c.TLS.Cert),
				"key":                  d.String(&c.TLS.Key),
				"insecure_skip_verify": d.Bool(&c.TLS.InsecureSkipVerify),
			}),
		}
	},
	Docs:          docs,
	Defaults:      defaults,
	Validate:      validate,
	ValidateFault: validateFault,
	Describe: func(t scenario.Target) string {
		c := ConfigOf(t)
		urls := make([]string, len(c.URLs))
		for i, u := range c.URLs {
			urls[i] = c.ShownURL(u)
		}
		return fmt.Sprintf("http ×%d (%s)", len(c.URLs), strings.Join(urls, ", "))
	},
}

func defaults(t *scenario.Target, set func(string) bool) {
	c := ConfigOf(*t)
	if t.Gateways == 0 && !set("target.gateways") && len(c.URLs) > 0 {
		t.Gateways = len(c.URLs)
	}
	if c.Method == "" {
		c.Method = DefaultMethod
	}
	if c.Identity == (Identity{}) && !set("target.identity") && !c.carriesID() {
		c.Identity.Header = DefaultIDHeader
	}
	if c.DeniedStatus == nil {
		c.DeniedStatus = []int{429}
	}
	if c.RequestTimeout == 0 && !set("target.request_timeout") {
		c.RequestTimeout = DefaultRequestTimeout
		if set("target.timeout") && t.Timeout > 0 {
			// A file written before request_timeout existed bounded its
			// requests with timeout: it keeps doing so.
			c.RequestTimeout = t.Timeout
		}
	}
}

func validate(ck scenario.Check, sc *scenario.Scenario) {
	t := &sc.Target
	c := ConfigOf(*t)
	bad := ck.Errorf
	if len(c.URLs) == 0 {
		bad("target.urls", "an http target needs urls")
	}
	for i, u := range c.URLs {
		if err := CheckURL(u); err != nil {
			bad(scenario.Index("target.urls", i), "%v", err)
		}
	}
	if c.Identity.Header != "" && c.Identity.Query != "" {
		bad("target.identity", "give header or query, not both")
	} else if c.Identity == (Identity{}) && !c.carriesID() {
		bad("target.identity", "give header, query or source, or put {id} in urls, headers or body")
	}
	if c.Identity.Source != "" {
		if _, err := SourceAddrs(c.Identity.Source, max(sc.Traffic.Identities, 1)); err != nil {
			bad("target.identity", "source: %v", err)
		}
	}
	if ck.Set("target.gateways") && t.Gateways != len(c.URLs) {
		bad("target.gateways", "an http target has one gateway per URL (%d), got %d", len(c.URLs), t.Gateways)
	}
	if (c.TLS.Cert == "") != (c.TLS.Key == "") {
		bad("target.tls", "a client certificate needs both cert and key")
	}
	if c.TLS.Set() && !slices.ContainsFunc(c.URLs, func(u string) bool { return strings.HasPrefix(strings.ToLower(u), "https://") }) {
		bad("target.tls", "applies to https:// URLs, and none is")
	}
	checkShowQuery(c, bad)
	if ck.Set("target.timeout") && ck.Set("target.request_timeout") {
		bad("target.timeout", "an http target's requests are bounded by request_timeout; timeout (a Redis call's) does not apply: give request_timeout only")
	}
	if c.RequestTimeout <= 0 {
		bad("target.request_timeout", "must be positive: a silent gateway must not hang a request")
	}
	validateDeployment(ck, t, c)
	readTLS(ck, &c.TLS)
}

// carriesID reports whether the URLs, headers or body carry the identity
// as {id}: then the target needs no identity header or parameter.
func (c *Config) carriesID() bool {
	for _, u := range c.URLs {
		if strings.Contains(u, idPlaceholder) {
			return true
		}
	}
	for _, v := range c.Headers {
		if strings.Contains(v, idPlaceholder) {
			return true
		}
	}
	return strings.Contains(c.Body, idPlaceholder)
}

// ShownURL is one of c's URLs (or one made from it) as rlctl shows it
// anywhere: no password, and xxxxx for every query value except those of
// show_query and the identity parameter.
func (c *Config) ShownURL(u string) string {
	return redact.TargetURL(u, c.shownQuery()...)
}

// RedactError hides, in the URL an error from net/http carries, what
// ShownURL hides. Call it on the error as returned, before wrapping it.
func (c *Config) RedactError(err error) error {
	return redact.TargetError(err, c.shownQuery()...)
}

func (c *Config) shownQuery() []string {
	if c.Identity.Query == "" {
		return c.ShowQuery
	}
	return append(slices.Clip(c.ShowQuery), c.Identity.Query)
}

// checkShowQuery: show_query names parameters the URLs have (a typo would
// show nothing and hide nothing), never one redact hides.
func checkShowQuery(c *Config, bad func(path, format string, args ...any)) {
	var present []string
	for _, u := range c.URLs {
		for _, p := range redact.QueryParams(u) {
			present = append(present, p.Name)
		}
	}
	if c.Identity.Query != "" {
		present = append(present, c.Identity.Query)
	}
	for i, name := range c.ShowQuery {
		p := scenario.Index("target.show_query", i)
		switch {
		case name == "":
			bad(p, "must not be empty")
		case slices.Contains(c.Redact, name):
			bad(p, "%q is also in redact, whose values are never shown: keep it in one of the two", name)
		case !slices.Contains(present, name):
			bad(p, "%q is a query parameter of none of the urls%s", name, suggest.DidYouMean(name, present))
		}
	}
}

// validateDeployment checks what the target says of its deployment's own
// Redis: a redis:// URL (rlctl starts nothing for it), the layout its
// counters are kept in, and the Toxiproxy in front of it.
func validateDeployment(ck scenario.Check, t *scenario.Target, c *Config) {
	bad := ck.Errorf
	if ck.Set("target.redis") && !strings.Contains(t.Redis, "://") {
		bad("target.redis", "an http target's Redis is the deployment's own: give its redis://, rediss://, redis+sentinel:// or redis+cluster:// URL, not %q", redact.URL(t.Redis))
	}
	if c.Schema != "" && c.Pattern != "" {
		bad("target.pattern", "give schema or pattern, not both")
	}
	if (c.Schema != "" || c.Pattern != "") && t.Redis == "" {
		bad("target.schema", "a counter layout is read in the deployment's Redis: give target.redis too")
	}
	if c.Pattern != "" && !strings.Contains(c.Pattern, idPlaceholder) {
		bad("target.pattern", "want a key pattern with {id} where the identity goes, like \"ratelimit:{id}\"")
	}
	if c.Schema != "" {
		if _, err := keyspace.NewRegistry(keyspace.Params{}).Lookup(c.Schema); err != nil {
			bad("target.schema", "%v", err)
		}
	}
	if tp := c.Toxiproxy; tp.Set() {
		if tp.API == "" || tp.Proxy == "" {
			bad("target.toxiproxy", "needs api (like http://127.0.0.1:8474) and proxy (the name of the proxy in front of the gateways' Redis)")
		} else if u, err := url.Parse(tp.API); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("target.toxiproxy", "api: want an http:// URL of the Toxiproxy API, got %q", redact.URL(tp.API))
		}
	}
}

// validateFault checks one fault on real gateways: each acts on what the
// target names (its Redis, its layout, its Toxiproxy), and never on a
// server in a way rlctl could not undo.
func validateFault(ck scenario.Check, t *scenario.Target, f scenario.Fault, p string) {
	bad := ck.Errorf
	c := ConfigOf(*t)
	needRedis := func(what string) {
		if t.Redis == "" {
			bad(p+".action", "%s acts on the deployment's own Redis: name it in target.redis", what)
		}
	}
	switch f.Action {
	case design.FaultFailover:
		needRedis("failover")
		if t.Redis != "" && !strings.Contains(t.Redis, "+sentinel://") && !strings.Contains(t.Redis, "+cluster://") {
			bad(p+".action", "failover needs a Sentinel or Cluster deployment (target.redis redis+sentinel:// or redis+cluster://): a standalone Redis has no replica to promote")
		}
	case design.FaultRedisStall:
		needRedis("redis-stall")
	case design.FaultRedisReset:
		needRedis("redis-reset")
		if c.Schema == "" && c.Pattern == "" {
			bad(p+".action", "redis-reset deletes the run identities' counters: name their layout in target.schema or target.pattern")
		}
	case design.FaultRedisDown, design.FaultRedisLatency:
		if !c.Toxiproxy.Set() {
			bad(p+".action", "%s on real gateways goes through the Toxiproxy in front of their Redis: name it in target.toxiproxy", f.Action)
		}
	case design.FaultKillPrimary:
		bad(p+".action", "kill-primary kills a server, and rlctl never kills one it did not start: use failover")
	case design.FaultGatewayDown:
		bad(p+".action", "gateway-down stops a simulated gateway; rlctl does not stop real ones")
	}
	if ck.Set(p + ".replica_lag") {
		bad(p+".replica_lag", "cuts a replica off, and rlctl never reconfigures a server it did not start")
	}
}

// readTLS reads the TLS files (relative to the scenario file) and checks
// they hold what they should: a CA bundle, a certificate and its key.
func readTLS(ck scenario.Check, f *TLSFiles) {
	read := func(field string, path *string, dst *[]byte) bool {
		if *path == "" {
			return false
		}
		p, b, err := ck.ReadFile(*path)
		if err != nil {
			ck.Errorf(field, "read: %v", err)
			return false
		}
		*path, *dst = p, b
		return true
	}
	if read("target.tls.ca", &f.CA, &f.CAPEM) && !x509.NewCertPool().AppendCertsFromPEM(f.CAPEM) {
		ck.Errorf("target.tls.ca", "%s holds no PEM certificate", f.CA)
	}
	okCert := read("target.tls.cert", &f.Cert, &f.CertPEM)
	okKey := read("target.tls.key", &f.Key, &f.KeyPEM)
	if okCert && okKey {
		if _, err := tls.X509KeyPair(f.CertPEM, f.KeyPEM); err != nil {
			ck.Errorf("target.tls.cert", "certificate and key: %v", err)
		}
	}
}

// docs document the http kind's fields for rlctl help scenarios.
var docs = []scenario.FieldDoc{
	{Path: "target.schema", Doc: "http only: the key layout the gateways keep their counters in, any rlctl keys --schema name (redis-rate, envoy, ulule, spring, kong, ... or one of rlctl's designs): rlctl reads the run identities' counters there (read-only) at the start, around each fault and at the end, for counts_lost and counter_drift, and redis-reset deletes exactly those identities' keys. Needs target.redis."},
	{Path: "target.pattern", Doc: "http only: a custom counter layout instead of schema, a key pattern with {id}, like \"ratelimit:{id}\" (a string counter per identity)."},
	{Path: "target.toxiproxy", Doc: "http only: the Toxiproxy through which the gateways reach their Redis, for redis-down and redis-latency on a real deployment; rlctl adds its own toxics through the API and removes every one it added afterwards, on SIGINT too, and never one it did not add."},
	{Path: "target.toxiproxy.api", Doc: "The Toxiproxy API, like http://127.0.0.1:8474."},
	{Path: "target.toxiproxy.proxy", Doc: "The name of the proxy in front of the gateways' Redis."},
	{Path: "target.urls", Doc: "http only: the gateways' URLs, each one gateway (or one load balancer). {id} in a URL stands for the identity."},
	{Path: "target.request_timeout", Doc: "http only: how long one request may take, from opening its connection to the end of its answer; one slower is recorded as an error naming this field, and counts as undecided. Default 5s, for a gateway across a network; the 50ms of timeout is a Redis call's."},
	{Path: "target.method", Doc: "http only: the request method. Default GET."},
	{Path: "target.identity", Doc: "http only: how each request carries its identity. Default {header: X-API-Key}, unless {id} appears in urls, headers or body."},
	{Path: "target.identity.header", Doc: "Send the identity in this header."},
	{Path: "target.identity.query", Doc: "Send the identity in this query parameter."},
	{Path: "target.identity.source", Doc: "Give each identity its own client address from this prefix (like 127.0.1.0/24), for gateways that key their limit on the client's address."},
	{Path: "target.headers", Doc: "http only: headers sent with every request; {id} stands for the identity."},
	{Path: "target.body", Doc: "http only: the request body; {id} stands for the identity."},
	{Path: "target.denied_status", Doc: "http only: the statuses that mean denied. Default [429]."},
	{Path: "target.tls", Doc: "http only: TLS for https:// gateways; paths are relative to the scenario file."},
	{Path: "target.tls.ca", Doc: "A CA certificate (PEM) to trust."},
	{Path: "target.tls.cert", Doc: "A client certificate (PEM); needs key."},
	{Path: "target.tls.key", Doc: "The client certificate's key (PEM); needs cert."},
	{Path: "target.tls.insecure_skip_verify", Doc: "Trust any server certificate (a test gateway's self-signed one). Default false."},
	{Path: "target.show_query", Doc: "http only: the query parameters of urls whose values reports, histories and messages may show, like [page, version]. Every other query value is shown as xxxxx wherever rlctl prints or saves a URL, since a gateway's URL may carry a secret under any name (pass, sid, ticket, otp …); the identity parameter (identity: {query: …}) shows its value, the run's own identity name. List only parameters that carry no secret. Default: none."},
	{Path: "target.redact", Doc: "http only: query parameters whose values are never shown. Every value is hidden already unless show_query names it, so redact only guards: a name in both is an error. Kept for files written when only credential-like names were hidden."},
}
