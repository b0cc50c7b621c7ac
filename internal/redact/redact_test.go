package redact

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in    string
		extra []string
		want  string
	}{
		{"https://gw.example/v1?token=abc&user=bob", nil, "https://gw.example/v1?token=xxxxx&user=bob"},
		{"https://gw.example/v1?api_key={id}&X-Amz-Signature=f00&page=2", nil, "https://gw.example/v1?api_key={id}&X-Amz-Signature=xxxxx&page=2"},
		{"http://u:pw@gw:8080/a?Access_Token=t#frag", nil, "http://u:xxxxx@gw:8080/a?Access_Token=xxxxx#frag"},
		{"http://gw/a?sid=1&code=2", []string{"code"}, "http://gw/a?sid=1&code=xxxxx"},
		{"redis://:s3cret@h:6379/0?sentinel_password=p&db=1", nil, "redis://:xxxxx@h:6379/0?sentinel_password=xxxxx&db=1"},
		{"http://gw/path@with/at", nil, "http://gw/path@with/at"},
		{"http://gw/?password=", nil, "http://gw/?password="},
		{"not a url", nil, "not a url"},
		{"redis://u:pa/ss@w@h:1", nil, "redis://u:xxxxx@h:1"},
	} {
		if got := URL(tt.in, tt.extra...); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestError(t *testing.T) {
	t.Parallel()
	err := Error(&url.Error{Op: "Get", URL: "http://gw/?secret=s3", Err: errors.New("EOF")})
	if got := fmt.Errorf("wrapped: %w", err).Error(); strings.Contains(got, "s3") || !strings.Contains(got, "secret=xxxxx") {
		t.Errorf("Error = %q", got)
	}
}

func FuzzURL(f *testing.F) {
	f.Add("https://u:p@gw/a?token=abc&x=1#f", "x")
	f.Fuzz(func(t *testing.T, s, extra string) {
		got := URL(s, extra)
		// Redacting twice changes nothing more, and a secret value
		// never survives.
		if again := URL(got, extra); again != got {
			t.Fatalf("not idempotent: %q → %q → %q", s, got, again)
		}
		u, err := url.Parse(got)
		if err != nil || u.RawQuery == "" {
			return
		}
		for _, p := range strings.Split(u.RawQuery, "&") {
			k, v, ok := strings.Cut(p, "=")
			if key, kerr := url.QueryUnescape(k); kerr == nil && ok && SecretName(key, extra) && v != "" && v != Mask && v != "{id}" {
				t.Fatalf("%q: secret %s=%s survived in %q", s, k, v, got)
			}
		}
	})
}
