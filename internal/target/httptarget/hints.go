package httptarget

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"

	"github.com/rlctl/rlctl/internal/traffic"
)

// Hints are what an HTTP answer said about its rate limit. Unknown fields
// are -1 (Policy "").
type Hints struct {
	Limit, Remaining int64
	// Reset is how long until the quota is back: the effective window t of
	// draft 11, RateLimit-Reset of older drafts, X-RateLimit-Reset.
	Reset time.Duration
	// RetryAfter is the Retry-After header: seconds or an HTTP date.
	RetryAfter time.Duration
	// Window is the policy's window (w), when the answer published one.
	Window time.Duration
	// Policy names the draft-11 policy the figures come from.
	Policy string
	// Form says which header families the answer carried.
	Form traffic.Form
	// Precision is how finely RetryAfter and Reset were stated, the
	// coarser of the two: a second for whole seconds (Retry-After: 2, a
	// Unix timestamp in seconds, draft 11's t), a millisecond for a
	// timestamp in milliseconds, 0 when neither was given.
	Precision time.Duration
}

// ParseHints reads Retry-After and the rate-limit header fields an answer
// may carry, at time now (for HTTP dates and epoch timestamps):
//
//   - draft-ietf-httpapi-ratelimit-headers-11: RateLimit and
//     RateLimit-Policy, Structured Field lists parsed by RFC 9651
//     (`"default";r=50;t=30`, `"default";q=100;w=60`); with several
//     policies the one with the least available quota wins, and its quota
//     comes from the policy of the same name. Malformed lists are ignored,
//     as the draft requires;
//   - draft 07's dictionary RateLimit: limit=100, remaining=50, reset=5;
//   - drafts 03 to 06: RateLimit-Limit, RateLimit-Remaining and
//     RateLimit-Reset (the limit may carry a policy, as in "100, 100;w=60")
//     and RateLimit-Policy "100;w=60";
//   - the legacy X-RateLimit-Limit, -Remaining and -Reset, where Reset is
//     seconds from now or a Unix timestamp (seconds or milliseconds, told
//     apart by size), and X-RateLimit-Reset-After (seconds); the same
//     spelled X-Rate-Limit-* (Twitter's API and others).
//
// A legacy count with decimals ("599.0", as Reddit sends) counts its whole
// part. Newer forms win over older ones, standard over legacy. Hints.Form
// records every family present, used or not.
func ParseHints(h http.Header, now time.Time) Hints {
	out := Hints{Limit: -1, Remaining: -1, Reset: -1, RetryAfter: -1, Window: -1}
	var resetPrec time.Duration
	if v := h.Get("Retry-After"); v != "" {
		out.Form |= traffic.FormRetryAfter
		if out.RetryAfter = parseRetryAfter(v, now); out.RetryAfter >= 0 {
			out.Precision = precisionOf(v)
		}
	}
	policy := h.Values("Ratelimit-Policy")
	if v := h.Values("Ratelimit"); len(v) > 0 {
		parseRateLimitField(v, policy, &out)
		resetPrec = time.Second // Structured Field integers: whole seconds
	} else if len(policy) > 0 {
		// A policy without a RateLimit field still publishes the quota.
		if q, w, form := policyQuota(policy, ""); form != 0 {
			out.Limit, out.Window, out.Form = q, w, out.Form|form
		}
	}
	if v := h.Get("Ratelimit-Limit"); v != "" {
		out.Form |= traffic.FormDraft06
		if out.Limit < 0 {
			out.Limit = firstInt(v)
		}
	}
	if v := h.Get("Ratelimit-Remaining"); v != "" {
		out.Form |= traffic.FormDraft06
		if out.Remaining < 0 {
			out.Remaining = firstInt(v)
		}
	}
	if v := h.Get("Ratelimit-Reset"); v != "" {
		out.Form |= traffic.FormDraft06
		if out.Reset < 0 {
			out.Reset, resetPrec = seconds(v), precisionOf(v)
		}
	}
	for _, p := range [...]string{"X-Ratelimit-", "X-Rate-Limit-"} {
		limit, remaining := h.Get(p+"Limit"), h.Get(p+"Remaining")
		after, reset := h.Get(p+"Reset-After"), h.Get(p+"Reset")
		if limit == "" && remaining == "" && after == "" && reset == "" {
			continue
		}
		out.Form |= traffic.FormXRateLimit
		if out.Limit < 0 {
			out.Limit = firstInt(limit)
		}
		if out.Remaining < 0 {
			out.Remaining = firstInt(remaining)
		}
		if out.Reset < 0 {
			out.Reset, resetPrec = seconds(after), precisionOf(after)
		}
		if out.Reset < 0 {
			out.Reset, resetPrec = legacyReset(reset, now), precisionOf(reset)
		}
	}
	if out.Reset >= 0 {
		out.Precision = max(out.Precision, resetPrec)
	}
	return out
}

// precisionOf is how finely a stated time is given: a number's last
// decimal place (a second for a whole number), a millisecond for a Unix
// timestamp in milliseconds, a second for an HTTP date.
func precisionOf(v string) time.Duration {
	v = strings.TrimSpace(v)
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return time.Second // an HTTP date: whole seconds
	}
	if f >= 1e12 && !strings.Contains(v, ".") {
		return time.Millisecond
	}
	_, frac, ok := strings.Cut(v, ".")
	if !ok || frac == "" {
		return time.Second
	}
	p := time.Second
	for range min(len(frac), 9) {
		p /= 10
	}
	return p
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

// sfInt is a Structured Field parameter that must be a non-negative
// Integer (r, t, q, w), or -1.
func sfInt(p *httpsfv.Params, name string) int64 {
	if p == nil {
		return -1
	}
	v, ok := p.Get(name)
	if !ok {
		return -1
	}
	n, ok := v.(int64)
	if !ok || n < 0 {
		return -1
	}
	return n
}

// sfName is an item's policy name: a String (draft 11) or a Token (drafts
// 08 and 09 wrote them bare), else "" and false.
func sfName(v any) (string, bool) {
	switch n := v.(type) {
	case string:
		return n, true
	case httpsfv.Token:
		return string(n), true
	}
	return "", false
}

// secondsOf turns a whole number of seconds into a duration, -1 staying -1.
func secondsOf(n int64) time.Duration {
	if n < 0 || n > 1e9 {
		return -1
	}
	return time.Duration(n) * time.Second
}

// parseRateLimitField reads the RateLimit field: draft 11's list of
// service limit items (the one with the least available quota r wins) or,
// failing that, draft 07's dictionary.
func parseRateLimitField(v, policy []string, out *Hints) {
	if l, err := httpsfv.UnmarshalList(v); err == nil {
		best, bestR := -1, int64(math.MaxInt64)
		var names []string
		for i, m := range l {
			it, ok := m.(httpsfv.Item)
			if !ok {
				names = append(names, "")
				continue
			}
			name, _ := sfName(it.Value)
			names = append(names, name)
			if r := sfInt(it.Params, "r"); r >= 0 && r < bestR {
				best, bestR = i, r
			}
		}
		if best < 0 {
			return // no item carries the required r: malformed, ignored
		}
		it := l[best].(httpsfv.Item)
		out.Form |= traffic.FormDraft11
		out.Remaining = bestR
		out.Reset = secondsOf(sfInt(it.Params, "t"))
		out.Policy = names[best]
		if q, w, form := policyQuota(policy, out.Policy); form != 0 {
			out.Limit, out.Window, out.Form = q, w, out.Form|form
		}
		return
	}
	d, err := httpsfv.UnmarshalDictionary(v)
	if err != nil {
		return
	}
	get := func(k string) int64 {
		m, ok := d.Get(k)
		if !ok {
			return -1
		}
		it, ok := m.(httpsfv.Item)
		if !ok {
			return -1
		}
		if n, ok := it.Value.(int64); ok && n >= 0 {
			return n
		}
		return -1
	}
	limit, remaining, reset := get("limit"), get("remaining"), get("reset")
	if limit < 0 && remaining < 0 && reset < 0 {
		return
	}
	out.Form |= traffic.FormDraft07
	out.Limit, out.Remaining, out.Reset = limit, remaining, secondsOf(reset)
}

// policyQuota is the quota q and window w of the named policy in
// RateLimit-Policy (draft 11), or of its first policy when name is empty
// or absent; drafts 03 to 06 wrote the quota as the item itself
// ("100;w=60"). The form says which shape it was, 0 when none fits.
func policyQuota(policy []string, name string) (int64, time.Duration, traffic.Form) {
	if len(policy) == 0 {
		return -1, -1, 0
	}
	l, err := httpsfv.UnmarshalList(policy)
	if err != nil || len(l) == 0 {
		return -1, -1, 0
	}
	var first *httpsfv.Item
	for _, m := range l {
		it, ok := m.(httpsfv.Item)
		if !ok {
			continue
		}
		if first == nil {
			first = &it
		}
		if n, ok := sfName(it.Value); ok && name != "" && n == name {
			first = &it
			break
		}
	}
	if first == nil {
		return -1, -1, 0
	}
	w := secondsOf(sfInt(first.Params, "w"))
	if n, ok := first.Value.(int64); ok && n >= 0 {
		return n, w, traffic.FormDraft06
	}
	if _, ok := sfName(first.Value); ok {
		if q := sfInt(first.Params, "q"); q >= 0 {
			return q, w, traffic.FormDraft11
		}
	}
	return -1, -1, 0
}
