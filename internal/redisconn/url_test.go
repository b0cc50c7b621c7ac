package redisconn

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want Target
	}{
		{"plain", "redis://127.0.0.1:6379",
			Target{Mode: ModeStandalone, Network: "tcp", Addrs: []string{"127.0.0.1:6379"}}},
		{"default port", "redis://cache.internal",
			Target{Mode: ModeStandalone, Network: "tcp", Addrs: []string{"cache.internal:6379"}}},
		{"password only and db", "redis://:s3cret@h:7000/2",
			Target{Mode: ModeStandalone, Network: "tcp", Addrs: []string{"h:7000"}, Password: "s3cret", PasswordSet: true, DB: 2}},
		{"acl user", "redis://alice:p%40ss@h:1/0",
			Target{Mode: ModeStandalone, Network: "tcp", Addrs: []string{"h:1"}, Username: "alice", Password: "p@ss", PasswordSet: true}},
		{"unescaped @ and / in password", "redis://bob:a@b/c@h:2",
			Target{Mode: ModeStandalone, Network: "tcp", Addrs: []string{"h:2"}, Username: "bob", Password: "a@b/c", PasswordSet: true}},
		{"user without password", "redis://carol@h:3",
			Target{Mode: ModeStandalone, Network: "tcp", Addrs: []string{"h:3"}, Username: "carol"}},
		{"ipv6", "redis://[::1]:6380",
			Target{Mode: ModeStandalone, Network: "tcp", Addrs: []string{"[::1]:6380"}}},
		{"ipv6 default port", "redis://[::1]",
			Target{Mode: ModeStandalone, Network: "tcp", Addrs: []string{"[::1]:6379"}}},
		{"tls", "rediss://h:6380?timeout=250ms&pool_size=4&client_name=rl&protocol=2",
			Target{Mode: ModeStandalone, TLS: true, Network: "tcp", Addrs: []string{"h:6380"},
				Timeout: 250 * time.Millisecond, PoolSize: 4, ClientName: "rl", Protocol: 2}},
		{"unix", "unix:///run/redis/redis.sock?db=3",
			Target{Mode: ModeStandalone, Network: "unix", Addrs: []string{"/run/redis/redis.sock"}, DB: 3}},
		{"unix with password", "unix://:pw@/tmp/r.sock",
			Target{Mode: ModeStandalone, Network: "unix", Addrs: []string{"/tmp/r.sock"}, Password: "pw", PasswordSet: true}},
		{"sentinel", "redis+sentinel://u:pw@s1:26379,s2/mymaster/1?sentinel_password=sp&sentinel_username=su",
			Target{Mode: ModeSentinel, Network: "tcp", Addrs: []string{"s1:26379", "s2:26379"}, MasterName: "mymaster",
				Username: "u", Password: "pw", PasswordSet: true, DB: 1, SentinelUsername: "su", SentinelPassword: "sp"}},
		{"sentinel tls", "rediss+sentinel://s1:5000/m",
			Target{Mode: ModeSentinel, TLS: true, Network: "tcp", Addrs: []string{"s1:5000"}, MasterName: "m"}},
		{"cluster", "redis+cluster://:pw@h1:7000,h2:7001,h3",
			Target{Mode: ModeCluster, Network: "tcp", Addrs: []string{"h1:7000", "h2:7001", "h3:6379"}, Password: "pw", PasswordSet: true}},
		{"cluster tls", "REDISS+CLUSTER://h1:7000",
			Target{Mode: ModeCluster, TLS: true, Network: "tcp", Addrs: []string{"h1:7000"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseURL(tt.raw)
			if err != nil {
				t.Fatalf("ParseURL(%q): %v", tt.raw, err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("ParseURL(%q)\n got %+v\nwant %+v", tt.raw, *got, tt.want)
			}
		})
	}
}

func TestParseURLRejects(t *testing.T) {
	tests := []struct {
		name, raw, wantErr string
	}{
		{"no scheme", "127.0.0.1:6379", "scheme"},
		{"unknown scheme", "http://h:1", "unknown scheme"},
		{"unknown option", "redis://h:1?dial_timeout=1s", `unknown option "dial_timeout"`},
		{"option twice", "redis://h:1?timeout=1s&timeout=2s", "more than once"},
		{"bad timeout", "redis://h:1?timeout=soon", "timeout"},
		{"zero timeout", "redis://h:1?timeout=0s", "timeout"},
		{"bad pool", "redis://h:1?pool_size=0", "pool_size"},
		{"bad protocol", "redis://h:1?protocol=4", "protocol"},
		{"db option outside unix", "redis://h:1?db=2", "path"},
		{"bad db", "redis://h:1/x", "database"},
		{"negative db", "redis://h:1/-1", "database"},
		{"extra path", "redis://h:1/1/2", "unexpected path"},
		{"bad port", "redis://h:99999", "port"},
		{"port zero", "redis://h:0", "port"},
		{"no host", "redis://", "missing host"},
		{"no host with user", "redis://u:p@:6379", "missing host"},
		{"several hosts standalone", "redis://h1:1,h2:2", "redis+cluster"},
		{"empty host in list", "redis+cluster://h1:1,,h2:2", "empty address"},
		{"sentinel without master", "redis+sentinel://s1:26379", "master name"},
		{"sentinel empty master", "redis+sentinel://s1:26379/", "master name"},
		{"cluster db", "redis+cluster://h1:1/2", "database 0"},
		{"sentinel option on plain", "redis://h:1?sentinel_password=x", "only applies"},
		{"unix with host", "unix://host/tmp/s.sock", "no host"},
		{"unix without path", "unix://", "socket path"},
		{"fragment", "redis://h:1#frag", "fragment"},
		{"bad escape in password", "redis://u:%zz@h:1", "percent-encoding"},
		{"space in host", "redis://a b:1", "invalid host"},
		{"unclosed bracket", "redis://u:p@[::1", "unclosed ["},
		{"unclosed bracket with port", "redis://[::1:6379", "unclosed ["},
		{"bracketed name", "redis://[redis.local]", "not an IPv6 address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseURL(tt.raw)
			if err == nil {
				t.Fatalf("ParseURL(%q) succeeded; want an error mentioning %q", tt.raw, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseURL(%q) = %v; want it to mention %q", tt.raw, err, tt.wantErr)
			}
		})
	}
}

func TestParseURLErrorsHidePassword(t *testing.T) {
	for _, raw := range []string{
		"redis://u:hunter2@h:1?bogus=1",
		"redis://u:hunter2@h:1/x",
		"redis://u:hunter2@h1:1,h2:2",
		"redis+sentinel://u:hunter2@s1",
		"redis+sentinel://s1/m?sentinel_password=hunter2&bogus=1",
		"redis://u:hunter2%zz@h:1",
		"ftp://u:hunter2@h",
		"redis://u:hunter2?@h:99999",
		"redis://u:hunter2@[::1",
	} {
		_, err := ParseURL(raw)
		if err == nil {
			t.Fatalf("ParseURL(%q) succeeded; want an error", raw)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseURL(%q) error leaks the password: %v", raw, err)
		}
	}
}

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"redis://h:1", "redis://h:1"},
		{"redis://u@h:1", "redis://u@h:1"},
		{"redis://:pw@h:1/2", "redis://:xxxxx@h:1/2"},
		{"redis://alice:pw@h:1", "redis://alice:xxxxx@h:1"},
		{"rediss://alice:p%40ss@h:1?timeout=1s", "rediss://alice:xxxxx@h:1?timeout=1s"},
		{"redis://bob:a@b/c?d@h:2", "redis://bob:xxxxx@h:2"},
		{"unix://:pw@/tmp/r.sock?db=1", "unix://:xxxxx@/tmp/r.sock?db=1"},
		{"redis+sentinel://u:pw@s1:26379,s2:26379/m?sentinel_password=sp&timeout=1s",
			"redis+sentinel://u:xxxxx@s1:26379,s2:26379/m?sentinel_password=xxxxx&timeout=1s"},
		{"redis+sentinel://s1,s2/m?sentinel_password=sp", "redis+sentinel://s1,s2/m?sentinel_password=xxxxx"},
		{"redis+cluster://:pw@h1:7000,h2:7001", "redis+cluster://:xxxxx@h1:7000,h2:7001"},
		{"embedded", "embedded"},
		{"u:pw@h:1", "u:xxxxx@h:1"},
		{"not a url at all", "not a url at all"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := Redact(tt.in); got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestConfigStringIsRedacted(t *testing.T) {
	env := map[string]string{"REDISCLI_AUTH": "from-env-secret"}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		url, want string
	}{
		{"redis://alice:url-secret@h:1", "redis://alice:xxxxx@h:1"},
		{"redis://alice@h:1", "redis://alice:xxxxx@h:1"}, // password from REDISCLI_AUTH
		{"redis+cluster://h1:1,h2:2", "redis+cluster://:xxxxx@h1:1,h2:2"},
		{"redis+sentinel://s1:1/m?sentinel_password=sent-secret", "redis+sentinel://:xxxxx@s1:1/m?sentinel_password=xxxxx"},
		{"unix:///tmp/s.sock?db=2", "unix://:xxxxx@/tmp/s.sock?db=2"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			c, err := Parse(Options{URL: tt.url, Getenv: getenv})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			for _, secret := range []string{"url-secret", "from-env-secret", "sent-secret"} {
				if strings.Contains(c.String(), secret) {
					t.Errorf("String() leaks %q", secret)
				}
			}
		})
	}
}

func TestREDISCLIAUTH(t *testing.T) {
	env := map[string]string{"REDISCLI_AUTH": "env-pw"}
	getenv := func(k string) string { return env[k] }
	c, err := Parse(Options{URL: "redis://h:1", Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	if c.Target().Password != "env-pw" {
		t.Errorf("password = %q, want it from REDISCLI_AUTH", c.Target().Password)
	}
	c, err = Parse(Options{URL: "redis://:url-pw@h:1", Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	if c.Target().Password != "url-pw" {
		t.Errorf("password = %q, want the URL's to win over REDISCLI_AUTH", c.Target().Password)
	}
}

func TestRedactError(t *testing.T) {
	c, err := Parse(Options{URL: "redis+sentinel://:data-pw@s:1/m?sentinel_password=sent-pw"})
	if err != nil {
		t.Fatal(err)
	}
	inner := &testErr{"auth data-pw and sent-pw rejected"}
	got := c.RedactError(inner)
	if got.Error() != "auth xxxxx and xxxxx rejected" {
		t.Errorf("RedactError = %q", got.Error())
	}
	if !errorsIs(got, inner) {
		t.Error("RedactError lost the wrapped error")
	}
}

// TestRedactShortPassword: a short password is replaced where it stands
// alone, not inside words, which would garble the message and show the
// password by the letters it took out ("dial tcxxxxx" for "p").
func TestRedactShortPassword(t *testing.T) {
	c, err := Parse(Options{URL: "redis://u:p@h:1"})
	if err != nil {
		t.Fatal(err)
	}
	got := c.RedactText("dial tcp h:1: auth u p failed (p)")
	if want := "dial tcp h:1: auth u xxxxx failed (xxxxx)"; got != want {
		t.Errorf("RedactText = %q, want %q", got, want)
	}
}

type testErr struct{ s string }

func (e *testErr) Error() string { return e.s }

func TestTargetURLRoundTrips(t *testing.T) {
	for _, raw := range []string{
		"redis://h:1", "rediss://alice:xxxxx@h:1/3", "unix:///tmp/s.sock?db=2",
		"redis+sentinel://s1:1,s2:2/m/1", "redis+cluster://:xxxxx@h1:1,h2:2",
		"rediss+cluster://h1:1",
	} {
		tg, err := ParseURL(raw)
		if err != nil {
			t.Fatalf("ParseURL(%q): %v", raw, err)
		}
		if got := tg.URL(); got != raw {
			t.Errorf("URL() = %q, want %q", got, raw)
		}
	}
}

// FuzzParseURL checks that the parser never panics, that what it accepts
// formats back to a URL it accepts again with the same meaning, and that
// neither errors nor redacted output ever contain the password.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"redis://h:1", "redis://u:p@h:1/2?timeout=1s", "rediss://h", "unix:///s.sock?db=1",
		"redis+sentinel://u:p@s1,s2:2/m/1?sentinel_password=x", "redis+cluster://h1:1,h2:2",
		"redis://[::1]:1", "redis://a@b@c:1", "redis://:%41@h", "redis://h:1?x=%zz",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		tg, err := ParseURL(raw)
		if err != nil {
			if tg != nil {
				t.Fatal("error with a target")
			}
			return
		}
		if len(tg.Addrs) == 0 {
			t.Fatalf("%q: accepted without an address", raw)
		}
		if tg.PasswordSet {
			for _, shown := range []string{Redact(raw), tg.URL()} {
				r, err := ParseURL(shown)
				if err != nil {
					t.Fatalf("redacted form %q of %q does not parse: %v", shown, raw, err)
				}
				if r.Password != redactedPassword || r.Username != tg.Username {
					t.Fatalf("redacted form %q of %q: user %q password %q", shown, raw, r.Username, r.Password)
				}
			}
		}
		again, err := ParseURL(tg.URL())
		if err != nil {
			t.Fatalf("URL() of %q = %q does not parse: %v", raw, tg.URL(), err)
		}
		if again.Mode != tg.Mode || again.TLS != tg.TLS || !reflect.DeepEqual(again.Addrs, tg.Addrs) ||
			again.DB != tg.DB || again.MasterName != tg.MasterName || again.Username != tg.Username {
			t.Fatalf("%q -> %q changed meaning: %+v vs %+v", raw, tg.URL(), tg, again)
		}
	})
}

func errorsIs(err, target error) bool {
	for err != nil {
		if err == target {
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}
