package redact

import (
	"errors"
	"net/url"
	"slices"
	"strings"
)

// Mask stands in for every hidden value.
const Mask = "xxxxx"

// secretWords are the parts of a query parameter's name that mark its
// value as a credential; matching is by substring, case-insensitive, so
// "api_key", "X-Amz-Signature" and "access_token" all count. A false
// positive only hides a value that was harmless to show.
var secretWords = []string{"token", "key", "secret", "sig", "password", "passwd", "pwd", "auth", "credential", "session", "jwt"}

// SecretName reports whether a query parameter named name carries a
// credential: by the built-in words, or because extra names it (exactly,
// case-insensitive).
func SecretName(name string, extra ...string) bool {
	n := strings.ToLower(name)
	for _, e := range extra {
		if strings.EqualFold(n, e) {
			return true
		}
	}
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// URL returns s with the password in its user info and the values of
// secret query parameters (see SecretName) replaced by Mask. The rest is
// kept as written, unreordered and unre-encoded, so a reader recognises
// it; a value that is a template placeholder ({id}) is kept too. Without
// a scheme there is no user info to hide, only a query.
func URL(s string, extra ...string) string {
	return hideURL(s, func(name string) bool { return SecretName(name, extra...) })
}

// TargetURL returns s, an http target's URL, with the password in its
// user info and every query value replaced by Mask, except the values of
// the parameters named in show (exactly) and template placeholders
// ({id}). A gateway's URL may carry any secret under any name (pass, sid,
// ticket, otp …), so no list of credential names can be trusted to catch
// them all: what is shown is what the scenario says is safe.
func TargetURL(s string, show ...string) string {
	return hideURL(s, func(name string) bool { return !slices.Contains(show, name) })
}

// TargetError is Error for an http target's URLs: the URL a *url.Error
// carries is shown as TargetURL shows it.
func TargetError(err error, show ...string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = TargetURL(ue.URL, show...)
	}
	return err
}

// Param is one query parameter of a URL, as written (the value not
// unescaped, so a template such as {id} reads as it was given).
type Param struct{ Name, Value string }

// QueryParams lists the parameters of s's query (between '?' and '#'),
// names unescaped; one whose name does not unescape is left out.
func QueryParams(s string) []Param {
	_, q, ok := strings.Cut(s, "?")
	if !ok {
		return nil
	}
	q, _, _ = strings.Cut(q, "#")
	var out []Param
	for p := range strings.SplitSeq(q, "&") {
		k, v, _ := strings.Cut(p, "=")
		if name, err := url.QueryUnescape(k); err == nil && name != "" {
			out = append(out, Param{name, v})
		}
	}
	return out
}

// hideURL is s with the user info's password and the query values of the
// parameters hide says are secret replaced by Mask.
func hideURL(s string, hide func(name string) bool) string {
	scheme, rest, hasScheme := strings.Cut(s, "://")
	if !hasScheme || !isScheme(scheme) {
		scheme, rest, hasScheme = "", s, false
	}
	frag := ""
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest, frag = rest[:i], rest[i:]
	}
	query := ""
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		rest, query = rest[:i], rest[i+1:]
	}
	prefix := ""
	// The user info ends at the last '@' before the query, so a password
	// holding an unescaped '/' or '@' is still hidden whole; an '@' in a
	// path only makes its start look like a user name, which is shown.
	if i := strings.LastIndexByte(rest, '@'); i >= 0 && hasScheme {
		user, _, hasPass := strings.Cut(rest[:i], ":")
		prefix = rest[:i+1]
		if hasPass {
			prefix = user + ":" + Mask + "@"
		}
		rest = rest[i+1:]
	}
	out := prefix + rest
	if query != "" || strings.Contains(s, "?") {
		out += "?" + redactQuery(query, hide)
	}
	out += frag
	if hasScheme {
		out = scheme + "://" + out
	}
	return out
}

// isScheme reports whether s is a URL scheme: a letter, then letters,
// digits, '+', '-' or '.'.
func isScheme(s string) bool {
	for i, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

func redactQuery(q string, hide func(string) bool) string {
	parts := strings.Split(q, "&")
	for i, p := range parts {
		k, v, ok := strings.Cut(p, "=")
		if !ok || v == "" || v == "{id}" {
			continue
		}
		key, err := url.QueryUnescape(k)
		if err != nil {
			key = k
		}
		if hide(key) {
			parts[i] = k + "=" + Mask
		}
	}
	return strings.Join(parts, "&")
}

// Error hides the credentials in the URL a *url.Error carries (net/http's
// errors name the request's URL in full). Call it on the error as
// returned, before wrapping it: a wrapper made by fmt.Errorf has already
// copied the message. Other errors come back as they are.
func Error(err error, extra ...string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = URL(ue.URL, extra...)
	}
	return err
}
