package httptarget

import (
	"github.com/rlctl/rlctl/internal/redact"

	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// idMark stands for {id} while a URL is parsed and escaped: unreserved
// characters only, so url.Parse and RequestURI leave it whole.
const idMark = "rlctl0id0mark"

// idTemplate is a request URI (or a whole URL) with the identity at fixed
// places: a path segment (/users/{id}/orders) or a query value. The parts
// are the text between identities.
type idTemplate struct {
	parts []string
	// query[i] says the identity after parts[i] is in the query, so it is
	// escaped as a query value rather than as a path segment.
	query []bool
}

// newIDTemplate splits s at each idMark.
func newIDTemplate(s string) idTemplate {
	parts := strings.Split(s, idMark)
	t := idTemplate{parts: parts}
	inQuery := false
	for _, p := range parts[:len(parts)-1] {
		inQuery = inQuery || strings.Contains(p, "?")
		t.query = append(t.query, inQuery)
	}
	return t
}

// hasID reports whether the identity appears at all.
func (t idTemplate) hasID() bool { return len(t.parts) > 1 }

// appendTo appends the URI with id in place.
func (t idTemplate) appendTo(b []byte, id string) []byte {
	b = append(b, t.parts[0]...)
	for i, p := range t.parts[1:] {
		if t.query[i] {
			b = append(b, url.QueryEscape(id)...)
		} else {
			b = append(b, url.PathEscape(id)...)
		}
		b = append(b, p...)
	}
	return b
}

// parseIDURL parses a gateway URL that may carry {id} in its path or
// query, returning it with idMark in place of each {id}. The identity
// cannot name the host: the gateways are the URLs, fixed before the run.
func parseIDURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.ReplaceAll(raw, "{id}", idMark))
	if err != nil {
		// The error quotes the URL: without its password, {id} as written.
		return nil, errors.New(strings.ReplaceAll(redact.TargetError(err).Error(), idMark, "{id}"))
	}
	if strings.Contains(u.Host, idMark) || strings.Contains(u.User.String(), idMark) || strings.Contains(u.Fragment, idMark) {
		return nil, fmt.Errorf("URL %s: {id} goes in the path or the query, not the host, user or fragment", shownURL(u))
	}
	return u, nil
}

// shownURL is u as reports, logs and errors show it: {id} as written, the
// password and every query value hidden but those of the parameters in
// show (see redact.TargetURL).
func shownURL(u *url.URL, show ...string) string {
	return redact.TargetURL(strings.ReplaceAll(u.String(), idMark, "{id}"), show...)
}

// identityParams is show with the query parameters that carry the
// identity: the identity parameter, and those whose value is {id} in a
// URL. Their values are identity names, which reports show anyway.
func identityParams(urls []string, identity string, show []string) []string {
	out := slices.Clone(show)
	if identity != "" {
		out = append(out, identity)
	}
	for _, raw := range urls {
		for _, p := range redact.QueryParams(raw) {
			if p.Value == "{id}" && !slices.Contains(out, p.Name) {
				out = append(out, p.Name)
			}
		}
	}
	return out
}

// CheckURL checks a gateway URL as New will take it: http:// or
// https:// with a host, {id} (if any) in the path or query.
func CheckURL(raw string) error {
	u, err := parseIDURL(raw)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("URL %s: want http:// or https:// with a host", shownURL(u))
	}
	return nil
}

// CarriesID reports whether a URL, header value or body template carries
// the identity as {id}.
func CarriesID(s string) bool { return strings.Contains(s, "{id}") }

// SourceAddrs gives n identities one address each from prefix, for
// Options.Sources: a single address (/32, /128) serves one identity;
// a wider prefix is used from its first address after the network's own
// (127.0.1.0/24 gives 127.0.1.1, 127.0.1.2, ...).
func SourceAddrs(prefix string, n int) ([]netip.Addr, error) {
	p, err := netip.ParsePrefix(prefix)
	if err != nil {
		a, aerr := netip.ParseAddr(prefix)
		if aerr != nil {
			return nil, fmt.Errorf("want an address or a prefix such as 127.0.1.0/24, got %q", prefix)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	p = p.Masked()
	a := p.Addr()
	if p.Bits() < a.BitLen() {
		a = a.Next()
	}
	out := make([]netip.Addr, 0, n)
	for range n {
		if !a.IsValid() || !p.Contains(a) {
			return nil, fmt.Errorf("%s has room for %d identities, not %d", prefix, len(out), n)
		}
		out = append(out, a)
		a = a.Next()
	}
	return out, nil
}
