package httptarget

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/redact"
	"github.com/rlctl/rlctl/internal/traffic"
)

// Options configure an HTTP target: real gateways (or one load
// balancer) that answer a denied request with a status such as 429.
type Options struct {
	// URLs are the gateways, one URL each, or a single load balancer. {id}
	// in a path segment or a query value stands for the identity.
	URLs   []string
	Method string // GET by default
	// IdentityHeader or IdentityQuery says how the identity travels: as a
	// header (X-API-Key) or a query parameter (api_key). Neither sends it
	// only through the URL, Headers or Body templates.
	IdentityHeader string
	IdentityQuery  string
	// Headers and Body are templates: {id} stands for the identity.
	Headers map[string]string
	Body    string
	// DeniedStatus lists the statuses that mean "denied" (default [429]).
	DeniedStatus []int
	// Timeout bounds one request, from dialing to the end of the body
	// (default 5 s).
	Timeout time.Duration
	// MaxConns bounds connections kept per gateway (default 256, the
	// engine's default worker count).
	MaxConns int
	// Endpoints names the endpoints; requests are the same for all (default
	// one endpoint, "default").
	Endpoints []string
	// TLS configures https:// gateways (nil: the system's roots).
	TLS *tls.Config
	// Sources, when set, give identity i its own source address Sources[i]
	// (which must be this machine's, such as 127.0.0.2 on loopback): for
	// gateways that key their limit on the client's address, as nginx's
	// limit_req and many middlewares do by default.
	Sources []netip.Addr
	// ProbeSource is the address Probe's requests leave from (zero: the
	// machine's default), chosen outside Sources so that a gateway keying
	// on the client's address counts no probe against a run's identity.
	ProbeSource netip.Addr
	// ShowQuery names the query parameters whose values may be shown
	// wherever a URL is (reports, histories, messages): every other value
	// is hidden (see redact.TargetURL), except the identity's, which is the
	// run's own identity name.
	ShowQuery []string
}

type httpGateway struct {
	name string // the URL without its password, {id} where the identity goes
	url  string // the URL as given, for a request without the identity in it
	// uri is the URL with the identity in place: in the path ({id}), and
	// as the identity query parameter.
	uri idTemplate
}

type httpHeader struct {
	key   string // canonical
	value string
	hasID bool
}

type httpTarget struct {
	gws       []httpGateway
	endpoints []string
	method    string
	idHeader  string
	headers   []httpHeader
	body      string
	bodyHasID bool
	denied    [600]bool
	// nets are net/http clients, one per source address (one in all when
	// the target has no Sources).
	nets []*netClient
	// fast holds, per source address, one fasthttp pool per gateway when
	// every URL is plain http:// (see fastPool); nil means net/http does
	// the work.
	fast     [][]*fastPool
	sources  int // len(Options.Sources)
	tlsConf  *tls.Config
	timeout  time.Duration
	probeSrc netip.Addr
	// show names the query parameters whose values are shown: ShowQuery,
	// and those that carry the identity.
	show []string
}

// netClient is net/http's side of an http target, for one source address.
type netClient struct {
	client    *http.Client
	transport *http.Transport
	dials     *warmDials // connections, some opened ahead (Warm)
}

func newNetClient(dialer *net.Dialer, conf *tls.Config, timeout time.Duration, conns, gateways int) *netClient {
	n := &netClient{dials: newWarmDials(dialer, conf, timeout)}
	n.transport = &http.Transport{
		// Proxy stays nil: load goes only where the user pointed it.
		DialContext:         n.dials.plain,
		DialTLSContext:      n.dials.tls,
		MaxIdleConns:        conns * gateways,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	n.client = &http.Client{
		Transport: n.transport,
		Timeout:   timeout,
		// A redirect is the gateway's answer; following it would measure
		// something else.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return n
}

// maxDrain bounds how much of an answer's body is read before the
// connection is given up rather than reused.
const maxDrain = 1 << 20

var drainBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// New returns a target sending requests to real HTTP gateways, over a
// transport tuned for load: keep-alive, as many idle connections per host as
// workers, no compression, bodies drained into a pooled buffer so
// connections are reused.
func New(o Options) (traffic.Target, error) {
	if len(o.URLs) == 0 {
		return nil, errors.New("http target: no URLs")
	}
	if len(o.URLs) > 1<<16-1 {
		return nil, fmt.Errorf("http target: %d URLs, at most 65535", len(o.URLs))
	}
	if o.IdentityHeader != "" && o.IdentityQuery != "" {
		return nil, errors.New("http target: identity goes in a header or a query parameter, not both")
	}
	t := &httpTarget{method: strings.ToUpper(o.Method), body: o.Body, endpoints: o.Endpoints}
	if t.method == "" {
		t.method = http.MethodGet
	}
	if len(t.endpoints) == 0 {
		t.endpoints = []string{"default"}
	}
	t.show = identityParams(o.URLs, o.IdentityQuery, o.ShowQuery)
	parsed := make([]*url.URL, len(o.URLs))
	queries := make([]string, len(o.URLs))
	for i, raw := range o.URLs {
		u, err := parseIDURL(raw)
		if err != nil {
			return nil, fmt.Errorf("http target: bad URL: %w", err)
		}
		name := shownURL(u, t.show...)
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("http target: URL %s: want http:// or https:// with a host", name)
		}
		if o.IdentityQuery != "" {
			sep := "?"
			if strings.Contains(raw, "?") {
				sep = "&"
			}
			if strings.Contains(raw, "#") {
				return nil, fmt.Errorf("http target: URL %s: a fragment cannot carry a query parameter", name)
			}
			queries[i] = sep + url.QueryEscape(o.IdentityQuery) + "=" + idMark
		}
		full := strings.ReplaceAll(raw, "{id}", idMark) + queries[i]
		parsed[i] = u
		t.gws = append(t.gws, httpGateway{name: name, url: raw, uri: newIDTemplate(full)})
	}
	if o.IdentityHeader != "" {
		t.idHeader = http.CanonicalHeaderKey(o.IdentityHeader)
	}
	for k, v := range o.Headers {
		t.headers = append(t.headers, httpHeader{key: http.CanonicalHeaderKey(k), value: v, hasID: strings.Contains(v, "{id}")})
	}
	t.bodyHasID = strings.Contains(o.Body, "{id}")
	denied := o.DeniedStatus
	if len(denied) == 0 {
		denied = []int{http.StatusTooManyRequests}
	}
	for _, s := range denied {
		if s < 100 || s > 599 {
			return nil, fmt.Errorf("http target: denied status %d is not an HTTP status", s)
		}
		t.denied[s] = true
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	t.tlsConf, t.timeout, t.probeSrc = o.TLS, timeout, o.ProbeSource
	if a := o.ProbeSource; a.IsValid() && machineAddr(a) != nil {
		t.probeSrc = netip.Addr{} // not this machine's: probe from its default
	}
	conns := o.MaxConns
	if conns <= 0 {
		conns = traffic.DefaultWorkers
	}
	// Each source address gets its own connections: a gateway keying its
	// limit on the client's address sees one client per identity.
	locals := []net.Addr{nil}
	if len(o.Sources) > 0 {
		t.sources = len(o.Sources)
		locals = locals[:0]
		for _, a := range o.Sources {
			// An address this machine does not have would fail every
			// request of its identity: say so now instead.
			if err := machineAddr(a); err != nil {
				return nil, fmt.Errorf("http target: source address %s is not this machine's: %w", a, err)
			}
			locals = append(locals, &net.TCPAddr{IP: a.AsSlice(), Zone: a.Zone()})
		}
		// Identities share the workers: each needs only its share of
		// idle connections kept.
		conns = max(1, (conns+len(locals)-1)/len(locals))
	}
	plain := allPlainHTTP(parsed) && fastSends(t.method, t.body)
	for _, local := range locals {
		dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, LocalAddr: local}
		if !plain {
			t.nets = append(t.nets, newNetClient(dialer, o.TLS, timeout, conns, len(t.gws)))
			continue
		}
		pools := make([]*fastPool, len(parsed))
		for i, u := range parsed {
			pools[i] = newFastPool(u, t.method, queries[i], conns, dialer)
		}
		t.fast = append(t.fast, pools)
	}
	return t, nil
}

// machineAddr checks that connections can leave from a: nil when the
// machine has it (binding a UDP socket to it succeeds).
func machineAddr(a netip.Addr) error {
	probe, err := net.ListenUDP("udp", &net.UDPAddr{IP: a.AsSlice(), Zone: a.Zone()})
	if err != nil {
		return err
	}
	return probe.Close()
}

// source is the index of the connections r leaves on: its identity's
// source address, or the only set when the target has none.
func (t *httpTarget) source(r traffic.Request) (int, error) {
	if t.sources == 0 {
		return 0, nil
	}
	if int(r.Identity) >= t.sources {
		return 0, fmt.Errorf("identity %d has no source address (%d given)", r.Identity, t.sources)
	}
	return int(r.Identity), nil
}

// allPlainHTTP reports whether every URL is plain http:// with no user
// info (which the fast client does not send) and no fragment.
func allPlainHTTP(urls []*url.URL) bool {
	for _, u := range urls {
		if u.Scheme != "http" || u.User != nil || u.Fragment != "" {
			return false
		}
	}
	return true
}

func (t *httpTarget) Do(ctx context.Context, r traffic.Request) traffic.Response {
	src, err := t.source(r)
	if err != nil {
		return traffic.ErrResponse(err)
	}
	if t.fast != nil {
		return t.doFast(ctx, r, t.fast[src][r.Gateway])
	}
	g := &t.gws[r.Gateway]
	req, err := t.netRequest(ctx, g, r.ID)
	if err != nil {
		return traffic.ErrResponse(err)
	}
	resp, err := t.nets[src].client.Do(req)
	if err != nil {
		// The client's error names the URL: without its credentials.
		return lostResponse(t.timedOut(ctx, redact.TargetError(err, t.show...)))
	}
	drain(resp.Body)
	return t.answer(g, resp.StatusCode, resp.Header)
}

// netRequest builds net/http's request to gateway g for identity id.
func (t *httpTarget) netRequest(ctx context.Context, g *httpGateway, id string) (*http.Request, error) {
	u := g.url
	if g.uri.hasID() {
		u = string(g.uri.appendTo(nil, id))
	}
	var body io.Reader
	if t.body != "" {
		b := t.body
		if t.bodyHasID {
			b = strings.ReplaceAll(b, "{id}", id)
		}
		body = strings.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, t.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("build request for %s: %w", g.name, redact.TargetError(err, t.show...))
	}
	for _, h := range t.headers {
		v := h.value
		if h.hasID {
			v = strings.ReplaceAll(v, "{id}", id)
		}
		req.Header[h.key] = []string{v}
	}
	if t.idHeader != "" {
		req.Header[t.idHeader] = []string{id}
	}
	return req, nil
}

// ProbeID is the identity of the probe requests Probe sends, one per
// gateway, apart from every identity of the run.
const ProbeID = "rlctl-probe"

// ProbeConnectTimeout is the least time the probe gives a connection to
// open (TCP and TLS handshake): the first handshake of a run on a loaded
// machine, or a gateway that has just started, may take longer than the
// scenario's request timeout without the target being unreachable.
const ProbeConnectTimeout = 2 * time.Second

// Probe sends one request to every gateway, as identity ProbeID from
// ProbeSource (else the machine's default address), and requires an HTTP
// answer (any status) from each: the connection must open within
// ProbeConnectTimeout (or the target's timeout when longer), and the
// answer come within the target's timeout once the request is sent. A
// closed port, a server that speaks something else, a silent one or a
// black hole is found before the run's clock starts, instead of being
// measured as a run with nothing admitted.
func (t *httpTarget) Probe(ctx context.Context) error {
	connect := max(t.timeout, ProbeConnectTimeout)
	dialer := &net.Dialer{Timeout: connect}
	if t.probeSrc.IsValid() {
		dialer.LocalAddr = &net.TCPAddr{IP: t.probeSrc.AsSlice(), Zone: t.probeSrc.Zone()}
	}
	nc := newNetClient(dialer, t.tlsConf, connect, 1, len(t.gws))
	nc.transport.ResponseHeaderTimeout = t.timeout
	nc.client.Timeout = connect + t.timeout
	defer nc.transport.CloseIdleConnections()
	errs := make([]error, len(t.gws))
	var wg sync.WaitGroup
	for i := range t.gws {
		wg.Go(func() {
			g := &t.gws[i]
			req, err := t.netRequest(ctx, g, ProbeID)
			if err == nil {
				var resp *http.Response
				if resp, err = nc.client.Do(req); err == nil {
					drain(resp.Body)
					return
				}
			}
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // g.name already says which URL
			}
			if ctx.Err() == nil && isTimeout(err) {
				err = fmt.Errorf("within %s %s (the connection gets at least %s): %w", TimeoutField, t.timeout, ProbeConnectTimeout, err)
			}
			errs[i] = fmt.Errorf("%s did not answer: %w", g.name, err)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (t *httpTarget) doFast(ctx context.Context, r traffic.Request, p *fastPool) traffic.Response {
	g := &t.gws[r.Gateway]
	a, err := p.do(ctx, t, r.ID)
	if err != nil {
		return lostResponse(fmt.Errorf("%s %s: %w", t.method, g.name, t.timedOut(ctx, err)))
	}
	return t.answer(g, a.status, a.hints)
}

// answer turns a status and the limiter's headers into a Response.
func (t *httpTarget) answer(g *httpGateway, status int, h http.Header) traffic.Response {
	out := traffic.Response{RetryAfter: -1, Remaining: -1, Reset: -1, Status: status}
	if h != nil {
		hints := ParseHints(h, time.Now())
		out.RetryAfter, out.Remaining, out.Reset, out.Form = hints.RetryAfter, hints.Remaining, hints.Reset, hints.Form
		out.HintPrecision = hints.Precision
		// rlctl's own gateway (and any that copies it) says which path
		// decided, so fail-open and fallback decisions show through HTTP.
		if v := h.Get(decision.DecidedByHeader); v != "" {
			out.By, _ = decision.ParseBy(v)
		}
		if at, ok := decision.ParseDecidedAt(h.Get(decision.DecidedAtHeader)); ok {
			out.Decided = at
		}
	}
	switch s := status; {
	case s >= 0 && s < len(t.denied) && t.denied[s]:
		out.Outcome = decision.Denied
	case s >= 200 && s < 300:
		out.Outcome = decision.Allowed
	default:
		// A redirect (rlctl follows none), a 4xx not in denied_status, a
		// 5xx or an unknown status is neither an admission nor a denial.
		out.Outcome = decision.Error
		out.Err = fmt.Errorf("%s answered %d %s", g.name, s, http.StatusText(s))
		if out.By == decision.ByUnknown {
			// It may follow an admission: the upstream failed (or
			// redirected) after the limiter counted the request.
			out.By = decision.ByUnanswered
		}
	}
	return out
}

// drain reads what is left of a body (up to maxDrain) so the connection
// goes back to the pool, then closes it.
func drain(b io.ReadCloser) {
	buf := drainBufs.Get().(*[]byte)
	for n := 0; n < maxDrain; {
		k, err := b.Read(*buf)
		n += k
		if err != nil {
			break
		}
	}
	drainBufs.Put(buf)
	b.Close()
}

// TimeoutField is the scenario field that sets Options.Timeout. The error
// of a request that ran out of its timeout names it, with its value, so a
// gateway slower than the timeout reads as what to raise, not as a fault
// of the gateway.
const TimeoutField = "target.request_timeout"

// timedOut names the timeout in err when the request ran out of it (a
// dial or an answer slower than t.timeout), not when the run itself cut
// it short (ctx done). Wrapping keeps what lostResponse looks for.
func (t *httpTarget) timedOut(ctx context.Context, err error) error {
	if ctx.Err() != nil || !isTimeout(err) {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		// The run's deadline passed, though ctx may not say so yet: its
		// timer fires a moment after the connection deadline set from it.
		return err
	}
	return fmt.Errorf("no answer after %s %s: %w", TimeoutField, t.timeout, err)
}

// isTimeout reports whether err is a deadline that passed: the fast
// client's, net/http's Client.Timeout, a dial's.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// lostResponse is the error of a request whose answer never came: once
// sent (any failure but the dial's, in either client), the limiter may
// have admitted and counted it.
func lostResponse(err error) traffic.Response {
	out := traffic.ErrResponse(err)
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		out.By = decision.ByUnanswered
	}
	return out
}

// Warm opens conns connections to every gateway at once, as wrk connects
// before it measures: in the fast client's pools, or (https://, and URLs the
// fast client cannot send) handshaken ahead for net/http to take when it
// next dials. Nothing is sent, so no limiter counts a warm-up.
//
// With source addresses each identity's connections warm their share,
// at least one each, so the run's first request from every address finds
// a connection too.
func (t *httpTarget) Warm(ctx context.Context, conns int) error {
	sets := max(len(t.fast), len(t.nets))
	conns = max(1, (conns+sets-1)/sets)
	var wg sync.WaitGroup
	errs := make([]error, len(t.gws))
	for i, g := range t.gws {
		wg.Go(func() {
			for s := range sets {
				var err error
				if t.fast != nil {
					err = t.fast[s][i].warm(ctx, conns)
				} else {
					err = t.nets[s].dials.warm(ctx, g.url, conns)
				}
				if err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (t *httpTarget) Gateways() []string {
	names := make([]string, len(t.gws))
	for i, g := range t.gws {
		names[i] = g.name
	}
	return names
}

func (t *httpTarget) Endpoints() []string { return t.endpoints }

func (t *httpTarget) Close() error {
	for _, n := range t.nets {
		n.transport.CloseIdleConnections()
		n.dials.close()
	}
	for _, pools := range t.fast {
		for _, p := range pools {
			p.close()
		}
	}
	return nil
}
