package verify

import (
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/scenario"
)

// TestTargetSyntaxAtLoad: the targets' own parsers (Checks) check their
// fields when a scenario loads, each mistake named with file, line and
// field, and credentials hidden.
func TestTargetSyntaxAtLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want []string // each must appear in the error
	}{
		{"http bad url", "name: h\nlimit: 1/s\ntarget:\n  kind: http\n  urls:\n    - ftp://x\ntraffic: {rate: 1/s}\n", []string{`bad.yaml:6: target.urls[0]: URL ftp://x: want http:// or https:// with a host`}},
		{"http url with a password", "name: h\nlimit: 1/s\ntarget:\n  kind: http\n  urls:\n    - ftp://u:s3cret@x/\ntraffic: {rate: 1/s}\n", []string{`bad.yaml:6: target.urls[0]: URL ftp://u:xxxxx@x/: want http`}},
		{"http identity in host", "name: h\nlimit: 1/s\ntarget:\n  kind: http\n  urls:\n    - http://gw.example/ok\n    - http://{id}.gw.example/\ntraffic: {rate: 1/s}\n", []string{`bad.yaml:7: target.urls[1]: URL http://{id}.gw.example/: {id} goes in the path or the query, not the host`}},
		{"http source too small", "name: h\nlimit: 1/s\ntarget:\n  kind: http\n  urls: [http://gw.example/]\n  identity: {source: 127.0.1.0/30}\ntraffic: {rate: 1/s, identities: 4}\n", []string{`bad.yaml:6: target.identity: source: 127.0.1.0/30 has room for 3 identities, not 4`}},
		{"http source not an address", "name: h\nlimit: 1/s\ntarget:\n  kind: http\n  urls: [http://gw.example/]\n  identity: {source: localhost}\ntraffic: {rate: 1/s}\n", []string{`target.identity: source: want an address or a prefix such as 127.0.1.0/24, got "localhost"`}},
		{"unquoted string in allowed rule", "name: s\nlimit: 1/s\ntarget:\n  kind: redis-script\n  script: testdata/scripts/limit.lua\n  keys: [k]\n  allowed: '== OK'\ntraffic: {rate: 1/s}\n", []string{`bad.yaml:7: target.allowed: allowed rule "== OK": compare with a number, a quoted string or nil`}},
		{"bad retry_after", "name: s\nlimit: 1/s\ntarget:\n  kind: redis-script\n  script: testdata/scripts/limit.lua\n  keys: [k]\n  allowed: '== 1'\n  retry_after: '[2] minutes'\ntraffic: {rate: 1/s}\n", []string{`bad.yaml:8: target.retry_after: retry_after "[2] minutes": want a unit, ms or s`}},
		{"bad key template", "name: s\nlimit: 1/s\ntarget:\n  kind: redis-script\n  script: testdata/scripts/limit.lua\n  keys: ['rl:{user}', 'rl:{{{id}}}']\n  args: ['{limit']\n  allowed: '== 1'\ntraffic: {rate: 1/s}\n", []string{
			`bad.yaml:6: target.keys: "rl:{user}": unknown placeholder {user}`,
			`bad.yaml:7: target.args: "{limit": unclosed '{'`,
		}},
		{"bad allowed rule", "name: s\nlimit: 1/s\ntarget:\n  kind: redis-script\n  script: testdata/scripts/limit.lua\n  keys: [k]\n  allowed: 'yes please'\ntraffic: {rate: 1/s}\n", []string{`bad.yaml:7: target.allowed: allowed rule "yes please": want a comparison`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := scenario.Parse([]byte(tt.yaml), "bad.yaml")
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("no %q in:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the password shows: %v", err)
			}
		})
	}
}
