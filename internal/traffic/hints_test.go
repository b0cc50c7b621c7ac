package traffic

import (
	"net/http"
	"testing"
	"time"
)

func TestParseHints(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	s := time.Second
	tests := []struct {
		name   string
		header map[string]string
		want   Hints
	}{
		{"nothing", nil, Hints{-1, -1, -1, -1}},
		{"retry-after seconds", map[string]string{"Retry-After": "7"}, Hints{-1, -1, -1, 7 * s}},
		{"retry-after date", map[string]string{"Retry-After": "Sun, 29 Nov 2026 12:00:30 GMT"}, Hints{-1, -1, -1, 30 * s}},
		{"retry-after past date", map[string]string{"Retry-After": "Sun, 29 Nov 2026 11:00:00 GMT"}, Hints{-1, -1, -1, 0}},
		{"retry-after garbage", map[string]string{"Retry-After": "soon"}, Hints{-1, -1, -1, -1}},
		{"draft 03-06 fields", map[string]string{"RateLimit-Limit": "100", "RateLimit-Remaining": "42", "RateLimit-Reset": "17"},
			Hints{100, 42, 17 * s, -1}},
		{"draft limit with policy", map[string]string{"RateLimit-Limit": "100, 100;w=60, 1000;w=3600", "RateLimit-Remaining": "0", "RateLimit-Reset": "3"},
			Hints{100, 0, 3 * s, -1}},
		{"draft policy field only", map[string]string{"RateLimit-Policy": "100;w=60", "RateLimit-Remaining": "9"},
			Hints{100, 9, -1, -1}},
		{"structured with policy", map[string]string{"RateLimit": `"default";r=50;t=30`, "RateLimit-Policy": `"default";q=100;w=60`},
			Hints{100, 50, 30 * s, -1}},
		{"structured, most restrictive wins", map[string]string{
			"RateLimit":        `"burst";r=8;t=1, "day";r=3;t=3600`,
			"RateLimit-Policy": `"burst";q=10;w=1, "day";q=1000;w=86400`},
			Hints{1000, 3, 3600 * s, -1}},
		{"structured without policy", map[string]string{"RateLimit": `"x";r=0;t=2`}, Hints{-1, 0, 2 * s, -1}},
		{"combined form", map[string]string{"RateLimit": "limit=100, remaining=50, reset=5"}, Hints{100, 50, 5 * s, -1}},
		{"legacy delta", map[string]string{"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "59", "X-RateLimit-Reset": "12"},
			Hints{60, 59, 12 * s, -1}},
		{"legacy epoch seconds", map[string]string{"X-RateLimit-Reset": "1795953645"}, Hints{-1, -1, 45 * s, -1}},
		{"legacy epoch millis", map[string]string{"X-RateLimit-Reset": "1795953601500"}, Hints{-1, -1, 1500 * time.Millisecond, -1}},
		{"legacy epoch in the past", map[string]string{"X-RateLimit-Reset": "1795950000"}, Hints{-1, -1, 0, -1}},
		{"legacy reset-after", map[string]string{"X-RateLimit-Reset-After": "0.25", "X-RateLimit-Reset": "1795953645"},
			Hints{-1, -1, 250 * time.Millisecond, -1}},
		{"legacy with a hyphen", map[string]string{"X-Rate-Limit-Limit": "900", "X-Rate-Limit-Remaining": "899", "X-Rate-Limit-Reset": "1795953660"},
			Hints{900, 899, 60 * s, -1}},
		{"x-ratelimit wins over x-rate-limit", map[string]string{"X-RateLimit-Remaining": "3", "X-Rate-Limit-Remaining": "4"},
			Hints{-1, 3, -1, -1}},
		{"decimal counts", map[string]string{"X-RateLimit-Remaining": "599.0", "X-RateLimit-Reset": "41"}, Hints{-1, 599, 41 * s, -1}},
		{"decimal garbage ignored", map[string]string{"RateLimit-Remaining": "5.x", "RateLimit-Limit": ".5"}, Hints{-1, -1, -1, -1}},
		{"standard wins over legacy", map[string]string{"RateLimit-Limit": "10", "X-RateLimit-Limit": "99", "RateLimit-Reset": "1", "X-RateLimit-Reset": "50"},
			Hints{10, -1, s, -1}},
		{"negative ignored", map[string]string{"RateLimit-Remaining": "-4", "RateLimit-Reset": "-1"}, Hints{-1, -1, -1, -1}},
		{"everything", map[string]string{"Retry-After": "2", "RateLimit": `"p";r=0;t=2`, "RateLimit-Policy": `"p";q=5;w=10`},
			Hints{5, 0, 2 * s, 2 * s}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got := ParseHints(h, now); got != tt.want {
				t.Errorf("ParseHints(%v) = %+v; want %+v", tt.header, got, tt.want)
			}
		})
	}
}

func FuzzParseHints(f *testing.F) {
	f.Add("7", `"default";r=50;t=30`, `"default";q=100;w=60`, "100", "1795953645")
	f.Add("Sun, 29 Nov 2026 12:00:30 GMT", "limit=100, remaining=50, reset=5", "", "1e400", "-1")
	f.Add("", `"a;b";r=1`, `"`, ",,;", "NaN")
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, retry, rl, policy, limit, reset string) {
		h := http.Header{}
		h.Set("Retry-After", retry)
		h.Set("RateLimit", rl)
		h.Set("RateLimit-Policy", policy)
		h.Set("RateLimit-Limit", limit)
		h.Set("X-RateLimit-Reset", reset)
		got := ParseHints(h, now)
		if got.Limit < -1 || got.Remaining < -1 || got.Reset < -1 || got.RetryAfter < -1 {
			t.Fatalf("ParseHints gave a negative value other than -1: %+v", got)
		}
	})
}
