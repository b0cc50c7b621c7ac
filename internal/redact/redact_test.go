package redact

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
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
		checkMasked(t, s, func(s string) string { return URL(s, extra) }, func(key string) bool { return SecretName(key, extra) })
	})
}

// checkMasked holds a redaction to its promise on input s: applying it
// twice changes nothing more, and no value of a parameter secret names
// survives (bar a placeholder or nothing).
func checkMasked(t *testing.T, s string, redact func(string) string, secret func(key string) bool) {
	t.Helper()
	got := redact(s)
	if again := redact(got); again != got {
		t.Fatalf("not idempotent: %q → %q → %q", s, got, again)
	}
	u, err := url.Parse(got)
	if err != nil || u.RawQuery == "" {
		return
	}
	for _, p := range strings.Split(u.RawQuery, "&") {
		k, v, ok := strings.Cut(p, "=")
		if key, kerr := url.QueryUnescape(k); kerr == nil && ok && secret(key) && v != "" && v != Mask && v != "{id}" {
			t.Fatalf("%q: secret %s=%s survived in %q", s, k, v, got)
		}
	}
}

func TestTargetURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		show []string
		want string
	}{
		{"https://gw/v1?pass=a&pw=b&sid=c&ticket=d&bearer=e&hmac=f&otp=g&pin=h&anything=i", nil,
			"https://gw/v1?pass=xxxxx&pw=xxxxx&sid=xxxxx&ticket=xxxxx&bearer=xxxxx&hmac=xxxxx&otp=xxxxx&pin=xxxxx&anything=xxxxx"},
		{"https://gw/v1?page=2&sid=c&api_key=user-1", []string{"page", "api_key"}, "https://gw/v1?page=2&sid=xxxxx&api_key=user-1"},
		{"https://gw/v1?Page=2", []string{"page"}, "https://gw/v1?Page=xxxxx"},
		{"https://gw/v1?user={id}&flag&empty=", nil, "https://gw/v1?user={id}&flag&empty="},
		{"http://u:pw@gw:8080/a?x=1#frag", nil, "http://u:xxxxx@gw:8080/a?x=xxxxx#frag"},
		{"https://gw/a%3Fb/c", nil, "https://gw/a%3Fb/c"},
		{"https://gw/v1?p%61ge=2", []string{"page"}, "https://gw/v1?p%61ge=2"},
	} {
		if got := TargetURL(tt.in, tt.show...); got != tt.want {
			t.Errorf("TargetURL(%q, %q) = %q, want %q", tt.in, tt.show, got, tt.want)
		}
	}
}

func TestTargetError(t *testing.T) {
	t.Parallel()
	err := TargetError(&url.Error{Op: "Get", URL: "http://gw/?otp=123456&api_key=u-1", Err: errors.New("EOF")}, "api_key")
	if got := fmt.Errorf("wrapped: %w", err).Error(); strings.Contains(got, "123456") || !strings.Contains(got, "otp=xxxxx&api_key=u-1") {
		t.Errorf("TargetError = %q", got)
	}
}

func FuzzTargetURL(f *testing.F) {
	f.Add("https://u:p@gw/a?sid=abc&page=1#f", "page")
	f.Fuzz(func(t *testing.T, s, show string) {
		checkMasked(t, s, func(s string) string { return TargetURL(s, show) }, func(key string) bool { return key != show })
	})
}

func TestQueryParams(t *testing.T) {
	t.Parallel()
	got := QueryParams("http://gw/a?u={id}&x=1&flag&v%5B%5D=2&%zz=3#f?y=4")
	want := []Param{{"u", "{id}"}, {"x", "1"}, {"flag", ""}, {"v[]", "2"}}
	if !slices.Equal(got, want) {
		t.Errorf("QueryParams = %q, want %q", got, want)
	}
	if QueryParams("http://gw/a") != nil {
		t.Error("params of a URL without a query")
	}
}
