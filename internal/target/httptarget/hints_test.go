package httptarget

import (
	"net/http"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/traffic"
)

// An answer says how finely it states when the quota is back: the
// boundary pattern aims only by hints finer than its shots.
func TestHintPrecision(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		header map[string]string
		want   time.Duration
	}{
		{nil, 0},
		{map[string]string{"Retry-After": "7"}, time.Second},
		{map[string]string{"Retry-After": "Sun, 29 Nov 2026 12:00:30 GMT"}, time.Second},
		{map[string]string{"Retry-After": "garbage"}, 0},
		{map[string]string{"RateLimit": `"default";r=0;t=5`}, time.Second},
		{map[string]string{"X-RateLimit-Reset": "1795953645"}, time.Second}, // ulule/limiter's whole Unix second
		{map[string]string{"X-RateLimit-Reset": "1795953601500"}, time.Millisecond},
		{map[string]string{"X-RateLimit-Reset-After": "0.25"}, 10 * time.Millisecond},
		{map[string]string{"RateLimit-Reset": "0.125"}, time.Millisecond},
		{map[string]string{"Retry-After": "0.125", "RateLimit-Reset": "3"}, time.Second}, // the coarser
	} {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		if got := ParseHints(h, now).Precision; got != tt.want {
			t.Errorf("%v: precision %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestParseHints(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	s := time.Second
	// none is a Hints with nothing known; set fills what a case expects.
	none := Hints{Limit: -1, Remaining: -1, Reset: -1, RetryAfter: -1, Window: -1}
	set := func(f func(*Hints)) Hints { h := none; f(&h); return h }
	tests := []struct {
		name   string
		header map[string]string
		want   Hints
	}{
		{"nothing", nil, none},
		{"retry-after seconds", map[string]string{"Retry-After": "7"}, set(func(h *Hints) { h.RetryAfter, h.Form = 7*s, traffic.FormRetryAfter })},
		{"retry-after date", map[string]string{"Retry-After": "Sun, 29 Nov 2026 12:00:30 GMT"}, set(func(h *Hints) { h.RetryAfter, h.Form = 30*s, traffic.FormRetryAfter })},
		{"retry-after past date", map[string]string{"Retry-After": "Sun, 29 Nov 2026 11:00:00 GMT"}, set(func(h *Hints) { h.RetryAfter, h.Form = 0, traffic.FormRetryAfter })},
		{"retry-after garbage", map[string]string{"Retry-After": "soon"}, set(func(h *Hints) { h.Form = traffic.FormRetryAfter })},
		{"draft 03-06 fields", map[string]string{"RateLimit-Limit": "100", "RateLimit-Remaining": "42", "RateLimit-Reset": "17"},
			set(func(h *Hints) { h.Limit, h.Remaining, h.Reset, h.Form = 100, 42, 17*s, traffic.FormDraft06 })},
		{"draft limit with policy", map[string]string{"RateLimit-Limit": "100, 100;w=60, 1000;w=3600", "RateLimit-Remaining": "0", "RateLimit-Reset": "3"},
			set(func(h *Hints) { h.Limit, h.Remaining, h.Reset, h.Form = 100, 0, 3*s, traffic.FormDraft06 })},
		{"draft-06 policy field only", map[string]string{"RateLimit-Policy": "100;w=60", "RateLimit-Remaining": "9"},
			set(func(h *Hints) { h.Limit, h.Remaining, h.Window, h.Form = 100, 9, 60*s, traffic.FormDraft06 })},
		// The examples of draft-ietf-httpapi-ratelimit-headers-11, sections
		// 3.2, 4.2 and appendix B.
		{"draft-11 4.2 with its policy", map[string]string{"RateLimit": `"default";r=50;t=30`, "RateLimit-Policy": `"default";q=100;w=10`},
			set(func(h *Hints) {
				h.Limit, h.Remaining, h.Reset, h.Window, h.Policy, h.Form = 100, 50, 30*s, 10*s, "default", traffic.FormDraft11
			})},
		{"draft-11 4.2 partition key, no window", map[string]string{"RateLimit": `"default";r=999;pk=:dHJpYWwxMjEzMjM=:`},
			set(func(h *Hints) { h.Remaining, h.Policy, h.Form = 999, "default", traffic.FormDraft11 })},
		{"draft-11 B.2.1 fixed window", map[string]string{"RateLimit": `"fixedwindow";r=99;t=50`, "RateLimit-Policy": `"fixedwindow";q=100;w=60`},
			set(func(h *Hints) {
				h.Limit, h.Remaining, h.Reset, h.Window, h.Policy, h.Form = 100, 99, 50*s, 60*s, "fixedwindow", traffic.FormDraft11
			})},
		{"draft-11 B.1.4 throttled with Retry-After date", map[string]string{"Retry-After": "Sun, 29 Nov 2026 12:00:05 GMT", "RateLimit": `"default";r=0;t=5`},
			set(func(h *Hints) {
				h.Remaining, h.Reset, h.RetryAfter, h.Policy, h.Form = 0, 5*s, 5*s, "default", traffic.FormDraft11|traffic.FormRetryAfter
			})},
		{"draft-11 3.2 several policies, quota of the one that applies", map[string]string{
			"RateLimit": `"perhr";r=3;t=3600`, "RateLimit-Policy": `"permin";q=50;w=60,"perhr";q=1000;w=3600`},
			set(func(h *Hints) {
				h.Limit, h.Remaining, h.Reset, h.Window, h.Policy, h.Form = 1000, 3, 3600*s, 3600*s, "perhr", traffic.FormDraft11
			})},
		{"draft-11 most restrictive wins", map[string]string{
			"RateLimit":        `"burst";r=8;t=1, "day";r=3;t=3600`,
			"RateLimit-Policy": `"burst";q=100;w=60,"daily";q=1000;w=86400, "day";q=1000;w=86400`},
			set(func(h *Hints) {
				h.Limit, h.Remaining, h.Reset, h.Window, h.Policy, h.Form = 1000, 3, 3600*s, 86400*s, "day", traffic.FormDraft11
			})},
		{"draft-11 policy field alone", map[string]string{"RateLimit-Policy": `"peruser";q=65535;qu="content-bytes";w=10;pk=:sdfjLJUOUH==:`},
			set(func(h *Hints) { h.Limit, h.Window, h.Form = 65535, 10*s, traffic.FormDraft11 })},
		{"draft 08 token names", map[string]string{"RateLimit": `default;r=50;t=5`, "RateLimit-Policy": `default;q=100;w=10`},
			set(func(h *Hints) {
				h.Limit, h.Remaining, h.Reset, h.Window, h.Policy, h.Form = 100, 50, 5*s, 10*s, "default", traffic.FormDraft11
			})},
		{"draft-11 malformed list ignored", map[string]string{"RateLimit": `"default";r=50;t=30,`}, none},
		{"draft-11 decimal r ignored", map[string]string{"RateLimit": `"default";r=5.0;t=30`}, none},
		{"draft-11 split over two fields", map[string]string{"RateLimit": `"a";r=9;t=1`, "X-Other": ""}, set(func(h *Hints) {
			h.Remaining, h.Reset, h.Policy, h.Form = 9, s, "a", traffic.FormDraft11
		})},
		{"draft 07 dictionary", map[string]string{"RateLimit": "limit=100, remaining=50, reset=5"},
			set(func(h *Hints) { h.Limit, h.Remaining, h.Reset, h.Form = 100, 50, 5*s, traffic.FormDraft07 })},
		{"legacy delta", map[string]string{"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "59", "X-RateLimit-Reset": "12"},
			set(func(h *Hints) { h.Limit, h.Remaining, h.Reset, h.Form = 60, 59, 12*s, traffic.FormXRateLimit })},
		{"legacy epoch seconds", map[string]string{"X-RateLimit-Reset": "1795953645"}, set(func(h *Hints) { h.Reset, h.Form = 45*s, traffic.FormXRateLimit })},
		{"legacy epoch millis", map[string]string{"X-RateLimit-Reset": "1795953601500"}, set(func(h *Hints) { h.Reset, h.Form = 1500*time.Millisecond, traffic.FormXRateLimit })},
		{"legacy epoch in the past", map[string]string{"X-RateLimit-Reset": "1795950000"}, set(func(h *Hints) { h.Reset, h.Form = 0, traffic.FormXRateLimit })},
		{"legacy reset-after", map[string]string{"X-RateLimit-Reset-After": "0.25", "X-RateLimit-Reset": "1795953645"},
			set(func(h *Hints) { h.Reset, h.Form = 250*time.Millisecond, traffic.FormXRateLimit })},
		{"legacy with a hyphen", map[string]string{"X-Rate-Limit-Limit": "900", "X-Rate-Limit-Remaining": "899", "X-Rate-Limit-Reset": "1795953660"},
			set(func(h *Hints) { h.Limit, h.Remaining, h.Reset, h.Form = 900, 899, 60*s, traffic.FormXRateLimit })},
		{"x-ratelimit wins over x-rate-limit", map[string]string{"X-RateLimit-Remaining": "3", "X-Rate-Limit-Remaining": "4"},
			set(func(h *Hints) { h.Remaining, h.Form = 3, traffic.FormXRateLimit })},
		{"decimal counts", map[string]string{"X-RateLimit-Remaining": "599.0", "X-RateLimit-Reset": "41"},
			set(func(h *Hints) { h.Remaining, h.Reset, h.Form = 599, 41*s, traffic.FormXRateLimit })},
		{"decimal garbage ignored", map[string]string{"RateLimit-Remaining": "5.x", "RateLimit-Limit": ".5"}, set(func(h *Hints) { h.Form = traffic.FormDraft06 })},
		{"standard wins over legacy", map[string]string{"RateLimit-Limit": "10", "X-RateLimit-Limit": "99", "RateLimit-Reset": "1", "X-RateLimit-Reset": "50"},
			set(func(h *Hints) { h.Limit, h.Reset, h.Form = 10, s, traffic.FormDraft06|traffic.FormXRateLimit })},
		{"draft 11 wins over draft 06", map[string]string{"RateLimit": `"p";r=1;t=2`, "RateLimit-Policy": `"p";q=5;w=10`, "RateLimit-Remaining": "4", "RateLimit-Limit": "6"},
			set(func(h *Hints) {
				h.Limit, h.Remaining, h.Reset, h.Window, h.Policy, h.Form = 5, 1, 2*s, 10*s, "p", traffic.FormDraft11|traffic.FormDraft06
			})},
		{"negative ignored", map[string]string{"RateLimit-Remaining": "-4", "RateLimit-Reset": "-1"}, set(func(h *Hints) { h.Form = traffic.FormDraft06 })},
		{"everything", map[string]string{"Retry-After": "2", "RateLimit": `"p";r=0;t=2`, "RateLimit-Policy": `"p";q=5;w=10`},
			set(func(h *Hints) {
				h.Limit, h.Remaining, h.Reset, h.RetryAfter, h.Window, h.Policy, h.Form = 5, 0, 2*s, 2*s, 10*s, "p", traffic.FormDraft11|traffic.FormRetryAfter
			})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				if v != "" {
					h.Set(k, v)
				}
			}
			got := ParseHints(h, now)
			got.Precision = 0 // TestHintPrecision's
			if got != tt.want {
				t.Errorf("ParseHints(%v)\n got %+v\nwant %+v", tt.header, got, tt.want)
			}
		})
	}
}

// A list may be split over several RateLimit fields (RFC 9651 3.1): they
// are read as one.
func TestParseHintsJoinsSplitFields(t *testing.T) {
	h := http.Header{}
	h.Add("RateLimit", `"burst";r=8;t=1`)
	h.Add("RateLimit", `"day";r=3;t=3600`)
	h.Add("RateLimit-Policy", `"burst";q=10;w=1`)
	h.Add("RateLimit-Policy", `"day";q=1000;w=86400`)
	got := ParseHints(h, time.Now())
	if got.Policy != "day" || got.Remaining != 3 || got.Limit != 1000 {
		t.Errorf("split fields read as %+v; want policy day, r=3, q=1000", got)
	}
}

func FuzzParseHints(f *testing.F) {
	f.Add("7", `"default";r=50;t=30`, `"default";q=100;w=60`, "100", "1795953645")
	f.Add("Sun, 29 Nov 2026 12:00:30 GMT", "limit=100, remaining=50, reset=5", "", "1e400", "-1")
	f.Add("", `"a;b";r=1`, `"`, ",,;", "NaN")
	f.Add("", `default;r=9223372036854775807;t=999999999999999`, `100;w=60`, "", "")
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, retry, rl, policy, limit, reset string) {
		h := http.Header{}
		h.Set("Retry-After", retry)
		h.Set("RateLimit", rl)
		h.Set("RateLimit-Policy", policy)
		h.Set("RateLimit-Limit", limit)
		h.Set("X-RateLimit-Reset", reset)
		got := ParseHints(h, now)
		if got.Limit < -1 || got.Remaining < -1 || got.Reset < -1 || got.RetryAfter < -1 || got.Window < -1 {
			t.Fatalf("ParseHints gave a negative value other than -1: %+v", got)
		}
	})
}
