package scenario

import "testing"

// TestHTTPRequestTimeout: an http target's requests get request_timeout,
// 5s by default; a file that bounded them with timeout before
// request_timeout existed keeps its bound; a simulated target is not given
// one.
func TestHTTPRequestTimeout(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, target     string
		request, timeout string
	}{
		{"default", "{kind: http, urls: [\"http://gw.example/\"]}", "5s", "50ms"},
		{"request_timeout", "{kind: http, urls: [\"http://gw.example/\"], request_timeout: 800ms}", "800ms", "50ms"},
		{"an older file's timeout", "{kind: http, urls: [\"http://gw.example/\"], timeout: 2s}", "2s", "2s"},
		{"simulated", "{algorithm: redis-gcra, timeout: 2s}", "0s", "2s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			scs, err := Parse([]byte("name: x\nlimit: 10/1s\ntarget: "+tt.target+"\ntraffic: {rate: 10/s}\n"), "s.yaml", checks)
			if err != nil {
				t.Fatal(err)
			}
			if got := scs[0].Target.RequestTimeout.String(); got != tt.request {
				t.Errorf("request timeout %s, want %s", got, tt.request)
			}
			if got := scs[0].Target.Timeout.String(); got != tt.timeout {
				t.Errorf("timeout %s, want %s", got, tt.timeout)
			}
		})
	}
}
