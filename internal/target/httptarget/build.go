package httptarget

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/target"
	"github.com/rlctl/rlctl/internal/traffic"
)

func init() {
	target.Register(target.Kind{Name: scenario.KindHTTP, Section: section, Build: build})
}

// build opens the http target s describes and checks, before the run,
// that every URL answers.
func build(ctx context.Context, s target.Spec) (*target.Built, error) {
	b := &target.Built{}
	ok := false
	defer b.Closing(&ok)()
	// Every fault on the deployment needs its flag, checked before anything
	// is opened.
	if err := consent(s); err != nil {
		return nil, err
	}
	usage := func(format string, err error) error {
		return exitcode.With(fmt.Errorf("%s: http target: "+format, s.Name, err), exitcode.Usage)
	}
	c := ConfigOf(s.Target)
	tlsConf, err := httpTLS(c.TLS)
	if err != nil {
		return nil, usage("%w", err)
	}
	var sources []netip.Addr
	var probeSrc netip.Addr
	if src := c.Identity.Source; src != "" {
		if sources, err = SourceAddrs(src, s.Identities); err != nil {
			return nil, usage("identity source: %w", err)
		}
		for _, a := range sources {
			b.IdentityNames = append(b.IdentityNames, a.String())
		}
		// The probe leaves from the prefix's next address when there is
		// one: the machine's default could be an identity's.
		if more, err := SourceAddrs(src, s.Identities+1); err == nil {
			probeSrc = more[len(more)-1]
		}
	}
	t, err := New(Options{
		URLs: c.URLs, Method: c.Method,
		IdentityHeader: c.Identity.Header, IdentityQuery: c.Identity.Query,
		Headers: c.Headers, Body: c.Body,
		DeniedStatus: c.DeniedStatus, Timeout: c.RequestTimeout, TLS: tlsConf,
		Sources: sources, ProbeSource: probeSrc, ShowQuery: c.ShowQuery,
	})
	if err != nil {
		return nil, usage("%w", err)
	}
	b.Target = t
	b.Defer(t.Close)
	b.Grace = c.RequestTimeout
	b.Clock = httpClock(c, tlsConf)
	ids := b.IdentityNames
	if len(ids) == 0 {
		for i := range s.Identities {
			ids = append(ids, fmt.Sprintf("user-%d", i))
		}
	}
	dep, err := openDeployment(ctx, b, s, ids)
	if err != nil {
		return nil, err
	}
	if s.Shared && dep != nil {
		// The gateways' Redis, when named, is the better reference: TIME
		// to the microsecond, read without writing anything.
		b.Clock = target.RedisClock(dep.cfg)
	}
	if p, isProber := t.(traffic.Prober); isProber {
		if err := p.Probe(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, exitcode.With(fmt.Errorf("%s: http target unreachable before the run: %w", s.Name, err), exitcode.Unreachable)
		}
		b.Notes = append(b.Notes, fmt.Sprintf("before the run, one request per URL (identity %s) checked that every gateway answers", ProbeID))
	}
	ok = true
	return b, nil
}

// httpTLS builds an http target's TLS settings from the PEM the scenario
// loaded; nil when none was given (the system's roots).
func httpTLS(f TLSFiles) (*tls.Config, error) {
	if !f.Set() {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: f.InsecureSkipVerify} //nolint:gosec // only on explicit request, for a test gateway
	if len(f.CAPEM) > 0 {
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(f.CAPEM) {
			return nil, fmt.Errorf("tls.ca %s: no PEM certificate", f.CA)
		}
	}
	if len(f.CertPEM) > 0 {
		cert, err := tls.X509KeyPair(f.CertPEM, f.KeyPEM)
		if err != nil {
			return nil, fmt.Errorf("tls.cert: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// httpClock sends one request as identity ProbeID (as the probe
// before the run does) to the target's first URL, and reads the gateway's
// decision time (X-RateLimit-Decided-At, to the microsecond), else its
// Date header (to the second).
func httpClock(t *Config, tlsConf *tls.Config) *target.Clock {
	c := &http.Client{Timeout: max(t.RequestTimeout, time.Second), Transport: &http.Transport{TLSClientConfig: tlsConf}}
	ref := &target.Clock{Name: "http Decided-At"}
	ref.Read = func(ctx context.Context) (time.Time, time.Duration, error) {
		fill := func(s string) string { return strings.ReplaceAll(s, "{id}", ProbeID) }
		u, err := url.Parse(fill(t.URLs[0]))
		if err != nil {
			return time.Time{}, 0, t.RedactError(err)
		}
		if t.Identity.Query != "" {
			q := u.Query()
			q.Set(t.Identity.Query, ProbeID)
			u.RawQuery = q.Encode()
		}
		method := t.Method
		if method == "" {
			method = http.MethodGet
		}
		var body io.Reader
		if t.Body != "" {
			body = strings.NewReader(fill(t.Body))
		}
		req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
		if err != nil {
			return time.Time{}, 0, t.RedactError(err)
		}
		for k, v := range t.Headers {
			req.Header.Set(k, fill(v))
		}
		if t.Identity.Header != "" {
			req.Header.Set(t.Identity.Header, ProbeID)
		}
		resp, err := c.Do(req)
		if err != nil {
			return time.Time{}, 0, t.RedactError(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		if at, ok := decision.ParseDecidedAt(resp.Header.Get(decision.DecidedAtHeader)); ok {
			return at, time.Microsecond, nil
		}
		at, err := http.ParseTime(resp.Header.Get("Date"))
		if err != nil {
			return time.Time{}, 0, fmt.Errorf("%s answered with neither %s nor a Date", t.ShownURL(t.URLs[0]), decision.DecidedAtHeader)
		}
		ref.Name = "http Date"
		return at, time.Second, nil
	}
	return ref
}
