package traffic

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Hints are what an HTTP answer said about its rate limit. Unknown fields
// are -1.
type Hints struct {
	Limit, Remaining int64
	// Reset is how long until the window resets (the quota is back).
	Reset time.Duration
	// RetryAfter is the Retry-After header: seconds or an HTTP date.
	RetryAfter time.Duration
}

// ParseHints reads Retry-After and the rate-limit header fields an answer
// may carry, at time now (for HTTP dates and epoch timestamps):
//
//   - the IETF draft fields RateLimit-Limit, RateLimit-Remaining and
//     RateLimit-Reset (drafts 03 to 06; the limit may carry a policy, as in
//     "100, 100;w=60");
//   - the structured RateLimit field of later drafts ("default";r=50;t=30)
//     with RateLimit-Policy ("default";q=100;w=60) for the limit;
//   - the combined form RateLimit: limit=100, remaining=50, reset=5;
//   - the legacy X-RateLimit-Limit, -Remaining and -Reset, where Reset is
//     seconds from now or a Unix timestamp (seconds or milliseconds, told
//     apart by size), and X-RateLimit-Reset-After (seconds); the same
//     spelled X-Rate-Limit-* (Twitter's API and others).
//
// A count with decimals ("599.0", as Reddit sends) counts its whole part.
//
// Standard fields win over legacy ones. Malformed values are ignored.
func ParseHints(h http.Header, now time.Time) Hints {
	out := Hints{Limit: -1, Remaining: -1, Reset: -1, RetryAfter: -1}
	if v := h.Get("Retry-After"); v != "" {
		out.RetryAfter = parseRetryAfter(v, now)
	}
	if v := h.Values("Ratelimit"); len(v) > 0 {
		parseRateLimitField(strings.Join(v, ","), h.Get("Ratelimit-Policy"), &out)
	}
	if out.Limit < 0 {
		out.Limit = firstInt(h.Get("Ratelimit-Limit"))
	}
	if out.Limit < 0 {
		out.Limit = policyQuota(h.Get("Ratelimit-Policy"), "")
	}
	if out.Remaining < 0 {
		out.Remaining = firstInt(h.Get("Ratelimit-Remaining"))
	}
	if out.Reset < 0 {
		out.Reset = seconds(h.Get("Ratelimit-Reset"))
	}
	for _, p := range [...]string{"X-Ratelimit-", "X-Rate-Limit-"} {
		if out.Limit < 0 {
			out.Limit = firstInt(h.Get(p + "Limit"))
		}
		if out.Remaining < 0 {
			out.Remaining = firstInt(h.Get(p + "Remaining"))
		}
		if out.Reset < 0 {
			out.Reset = seconds(h.Get(p + "Reset-After"))
		}
		if out.Reset < 0 {
			out.Reset = legacyReset(h.Get(p+"Reset"), now)
		}
	}
	return out
}

func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if d := seconds(v); d >= 0 {
		return d
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return -1
}

// seconds reads a non-negative number of seconds (fractions allowed), or -1.
func seconds(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return -1
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) || f > 1e9 {
		return -1
	}
	return time.Duration(f * float64(time.Second))
}

// firstInt reads the leading non-negative integer of a field such as
// "100, 100;w=60", or -1.
func firstInt(v string) int64 {
	v = strings.TrimSpace(v)
	end := strings.IndexAny(v, ",; ")
	if end >= 0 {
		v = v[:end]
	}
	if v == "" {
		return -1 // absent: skip ParseInt's error allocation on the hot path
	}
	if whole, frac, ok := strings.Cut(v, "."); ok && whole != "" && strings.Trim(frac, "0123456789") == "" {
		v = whole
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// legacyReset reads X-RateLimit-Reset: a delta in seconds, or a Unix
// timestamp in seconds (≥ 1e9) or milliseconds (≥ 1e12).
func legacyReset(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return -1
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) || f > 1e15 {
		return -1
	}
	switch {
	case f >= 1e12:
		return max(time.UnixMilli(int64(f)).Sub(now), 0)
	case f >= 1e9:
		return max(time.Unix(0, int64(f*1e9)).Sub(now), 0)
	}
	return time.Duration(f * float64(time.Second))
}

// sfItem is one item of a structured field list: a bare value and its
// parameters.
type sfItem struct {
	value  string
	params map[string]string
}

// sfList splits a structured field list ("a";r=1;t=2, "b";r=3) loosely:
// rlctl reads what gateways send, not only what the RFC allows.
func sfList(v string) []sfItem {
	var items []sfItem
	for _, part := range splitOutsideQuotes(v, ',') {
		fields := splitOutsideQuotes(part, ';')
		it := sfItem{value: unquote(strings.TrimSpace(fields[0])), params: map[string]string{}}
		for _, p := range fields[1:] {
			k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
			it.params[strings.ToLower(strings.TrimSpace(k))] = unquote(strings.TrimSpace(val))
		}
		items = append(items, it)
	}
	return items
}

func splitOutsideQuotes(s string, sep byte) []string {
	var out []string
	quoted, from := false, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '"':
			quoted = !quoted
		case s[i] == sep && !quoted:
			out = append(out, s[from:i])
			from = i + 1
		}
	}
	return append(out, s[from:])
}

func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

// parseRateLimitField reads the RateLimit field, in either the combined
// form (limit=100, remaining=50, reset=5) or the structured one
// ("name";r=50;t=30, several policies: the most restrictive wins).
func parseRateLimitField(v, policy string, out *Hints) {
	items := sfList(v)
	if len(items) == 0 {
		return
	}
	if strings.Contains(items[0].value, "=") {
		for _, it := range items {
			k, val, _ := strings.Cut(it.value, "=")
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "limit":
				out.Limit = firstInt(val)
			case "remaining":
				out.Remaining = firstInt(val)
			case "reset":
				out.Reset = seconds(val)
			}
		}
		return
	}
	best := -1
	var bestR int64 = math.MaxInt64
	for i, it := range items {
		r := firstInt(it.params["r"])
		if r < 0 {
			continue
		}
		if r < bestR {
			best, bestR = i, r
		}
	}
	if best < 0 {
		return
	}
	it := items[best]
	out.Remaining = bestR
	out.Reset = seconds(it.params["t"])
	out.Limit = policyQuota(policy, it.value)
}

// policyQuota is the quota (q) of the named policy in RateLimit-Policy, or
// of its first policy when name is empty or absent; older drafts write the
// quota as the leading number ("100;w=60").
func policyQuota(policy, name string) int64 {
	if strings.TrimSpace(policy) == "" {
		return -1
	}
	items := sfList(policy)
	pick := func(it sfItem) int64 {
		if q, ok := it.params["q"]; ok {
			return firstInt(q)
		}
		return firstInt(it.value)
	}
	for _, it := range items {
		if name != "" && it.value == name {
			return pick(it)
		}
	}
	return pick(items[0])
}
