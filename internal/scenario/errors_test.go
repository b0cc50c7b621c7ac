package scenario_test

import (
	"errors"
	"github.com/rlctl/rlctl/internal/scenario"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/exitcode"
)

// base is a valid scenario; each case appends or replaces lines so the
// mistake sits on a known line.
const base = `name: ok
limit: 10/1s
target:
  algorithm: redis-fixed-window
traffic:
  rate: 100/s
`

// baseT is base with target last, so appended lines land in target.
const baseT = `name: ok
limit: 10/1s
traffic:
  rate: 100/s
target:
  algorithm: redis-fixed-window
`

func TestLoadMistakes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want []string // each must appear in the error, in this order
	}{
		{"wrong type", base + "  identities: many\n", []string{`bad.yaml:7: traffic.identities: want an integer, got "many"`}},
		{"gateways not integer", "name: x\nlimit: 1/s\ntarget:\n  algorithm: redis-gcra\n  gateways: many\ntraffic: {rate: 1/s}\n", []string{`bad.yaml:5: target.gateways: want an integer, got "many"`}},
		{"float for integer", base + "  identities: 1.5\n", []string{`bad.yaml:7: traffic.identities: want an integer, got "1.5"`}},
		{"unknown top field", base + "thresholdz: []\n", []string{`bad.yaml:7: thresholdz: unknown field`}},
		{"replica lag on a reset", base + "faults:\n  - {at: 1s, action: redis-reset, replica_lag: 500ms}\n", []string{`bad.yaml:8: faults[0].replica_lag: applies to failover and kill-primary only`}},
		{"replica lag too long", base + "faults:\n  - {at: 4s, action: kill-primary, replica_lag: 3s}\n", []string{`bad.yaml:8: faults[0].replica_lag: want a duration above 0s and at most 2s, got 3s`}},
		{"replica lag before the run", base + "faults:\n  - {at: 200ms, action: failover, replica_lag: 1s}\n", []string{`bad.yaml:8: faults[0].replica_lag: 1s starts before the run: at most at (200ms)`}},
		{"unknown nested field", base + "  rte: 5/s\n", []string{`bad.yaml:7: traffic.rte: unknown field`}},
		{"field twice", base + "  rate: 5/s\n", []string{`bad.yaml:7: traffic.rate: field given twice`}},
		{"bad limit", strings.Replace(base, "10/1s", "10 per second", 1), []string{`bad.yaml:2: limit: limit "10 per second": want N/DURATION`}},
		{"bad rate", strings.Replace(base, "100/s", "0/s", 1), []string{`bad.yaml:6: traffic.rate: limit "0/s": count must be a positive integer`}},
		{"bad duration", base + "  duration: 5 seconds\n", []string{`bad.yaml:7: traffic.duration: want a duration like 50ms, got "5 seconds"`}},
		{"negative duration", base + "  duration: -1s\n", []string{`bad.yaml:7: traffic.duration: must not be negative`}},
		{"unknown algorithm", strings.Replace(base, "redis-fixed-window", "redis-magic", 1), []string{`bad.yaml:4: target.algorithm: unknown algorithm "redis-magic" (want one of local-fixed-window,`}},
		{"unknown kind", base + "faults: []\n" + "x: 1\n", []string{`bad.yaml:8: x: unknown field`}},
		{"unknown target kind", strings.Replace(base, "target:\n", "target:\n  kind: grpc\n", 1), []string{`bad.yaml:4: target.kind: unknown target kind "grpc"`}},
		{"unknown pattern", base + "  pattern: zigzag\n", []string{`bad.yaml:7: traffic.pattern: unknown traffic pattern "zigzag"`}},
		{"unknown spread", base + "  spread: hashed\n", []string{`bad.yaml:7: traffic.spread: unknown spread "hashed"`}},
		{"unknown align", base + "  pattern: boundary\n  align: noon\n", []string{`bad.yaml:8: traffic.align: unknown align "noon"`}},
		{"unknown on_error", baseT + "  endpoints:\n    - {name: a, share: 1, on_error: maybe}\n", []string{`bad.yaml:8: target.endpoints[0].on_error: unknown on_error policy "maybe"`}},
		{"unknown on_failover", baseT + "  endpoints:\n    - {name: a, share: 1, on_failover: panic}\n", []string{`bad.yaml:8: target.endpoints[0].on_failover: unknown on_failover policy "panic"`}},
		{"unknown shows", base + "shows: fix\n", []string{`bad.yaml:7: shows: unknown shows "fix" (want one of flaw, holds)`}},
		{"unknown requirement", base + "requires: sentinel\n", []string{`bad.yaml:7: requires: unknown requirement "sentinel" (want one of cluster)`}},
		{"cluster for a local design", strings.Replace(base, "redis-fixed-window", "local-fixed-window", 1) + "requires: cluster\n", []string{`bad.yaml:7: requires: cluster needs a design that keeps its state in Redis; local-fixed-window keeps it in each gateway's memory`}},
		{"cluster for an http target", "name: x\nlimit: 1/s\ntarget:\n  kind: http\n  urls: [http://127.0.0.1:1/]\ntraffic: {rate: 1/s}\nrequires: cluster\n", []string{`bad.yaml:7: requires: cluster needs a target whose Redis rlctl reaches`}},
		{"unknown fault action", base + "faults:\n  - {at: 1s, action: meteor}\n", []string{`bad.yaml:8: faults[0].action: unknown fault action "meteor"`}},
		{"unknown metric", base + "thresholds:\n  - ceiling <= limit\n  - leakage == 0\n", []string{`bad.yaml:9: thresholds[1]: threshold "leakage == 0": unknown name "leakage"`}},
		{"latency vs number", base + "thresholds:\n  - p99 < 5\n", []string{`bad.yaml:8: thresholds[0]: threshold "p99 < 5": p99 is a latency: compare it with a duration like 5ms`}},
		{"count vs duration", base + "thresholds:\n  - ceiling < 5ms\n", []string{`bad.yaml:8: thresholds[0]: threshold "ceiling < 5ms": a duration compares only with a latency`}},
		{"http needs urls", "name: h\nlimit: 1/s\ntarget:\n  kind: http\ntraffic: {rate: 1/s}\n", []string{`bad.yaml:3: target.urls: an http target needs urls`}},
		{"tls file missing", "name: h\nlimit: 1/s\ntarget:\n  kind: http\n  urls: [https://gw.example]\n  tls:\n    ca: nope.pem\ntraffic: {rate: 1/s}\n", []string{`bad.yaml:7: target.tls.ca: read: `}},
		{"tls ca not PEM", "name: h\nlimit: 1/s\ntarget:\n  kind: http\n  urls: [https://gw.example]\n  tls: {ca: testdata/scripts/limit.lua}\ntraffic: {rate: 1/s}\n", []string{`target.tls.ca: testdata/scripts/limit.lua holds no PEM certificate`}},
		{"tls cert without key", "name: h\nlimit: 1/s\ntarget:\n  kind: http\n  urls: [https://gw.example]\n  tls: {cert: c.pem}\ntraffic: {rate: 1/s}\n", []string{`target.tls: a client certificate needs both cert and key`}},
		{"tls on plain http", "name: h\nlimit: 1/s\ntarget:\n  kind: http\n  urls: [http://gw.example]\n  tls: {insecure_skip_verify: true}\ntraffic: {rate: 1/s}\n", []string{`target.tls: applies to https:// URLs, and none is`}},
		{"tls on a simulated target", "name: h\nlimit: 1/s\ntarget:\n  kind: simulated\n  tls: {insecure_skip_verify: true}\ntraffic: {rate: 1/s}\n", []string{`bad.yaml:5: target.tls: applies to http targets only`}},
		{"http unquoted template", "name: h\nlimit: 1/s\ntarget:\n  kind: http\n  urls: [http://gw.example/users/{id}]\ntraffic: {rate: 1/s}\n", []string{`bad.yaml:`, `a value with a template in braces must be quoted`}},
		{"http no identity anywhere", "name: h\nlimit: 1/s\ntarget:\n  kind: http\n  urls: [http://gw.example/]\n  identity: {}\ntraffic: {rate: 1/s}\n", []string{`target.identity: give header, query or source, or put {id} in urls, headers or body`}},
		{"script needs script keys allowed", "name: s\nlimit: 1/s\ntarget:\n  kind: redis-script\ntraffic: {rate: 1/s}\n", []string{
			`bad.yaml:3: target.script: a redis-script target needs script`,
			`bad.yaml:3: target.keys: a redis-script target needs keys`,
			`bad.yaml:3: target.allowed: a redis-script target needs allowed`,
		}},
		{"script missing file", "name: s\nlimit: 1/s\ntarget:\n  kind: redis-script\n  script: nope.lua\n  keys: [k]\n  allowed: '== 1'\ntraffic: {rate: 1/s}\n", []string{`bad.yaml:5: target.script: read script:`}},
		{"retry_after on a simulated target", "name: s\nlimit: 1/s\ntarget:\n  kind: simulated\n  algorithm: redis-fixed-window\n  retry_after: ms\ntraffic: {rate: 1/s}\n", []string{`bad.yaml:6: target.retry_after: applies to redis-script targets only`}},
		{"lease with leasing is fine", strings.Replace(baseT, "redis-fixed-window", "leasing", 1) + "  lease: {size: 5, refill_below: 0.5, adaptive: true}\n", nil},
		{"lease only for leasing", strings.Replace(base, "target:\n", "target:\n  lease: {size: 5}\n", 1), []string{`bad.yaml:4: target.lease: applies to the leasing algorithm only`}},
		{"shares sum", baseT + "  endpoints:\n    - {name: a, share: 0.5}\n    - {name: b, share: 0.4}\n", []string{`bad.yaml:7: target.endpoints: shares sum to 0.9, want 1`}},
		{"endpoint name twice", baseT + "  endpoints:\n    - {name: a, share: 0.5}\n    - {name: a, share: 0.5}\n", []string{`bad.yaml:9: target.endpoints[1].name: endpoint "a" given twice`}},
		{"local needs local limit", baseT + "  endpoints:\n    - {name: a, share: 1, on_error: local}\n", []string{`bad.yaml:8: target.endpoints[0].local: on_error: local needs local`}},
		{"rounds only for race", base + "  rounds: 10\n", []string{`bad.yaml:7: traffic.rounds: applies to the race pattern only`}},
		{"align only for boundary", base + "  align: epoch\n", []string{`bad.yaml:7: traffic.align: applies to the boundary pattern only`}},
		{"missing name and limit", "target: {algorithm: redis-gcra}\ntraffic: {rate: 1/s}\n", []string{`bad.yaml:1: name: missing`, `bad.yaml:1: limit: missing`}},
		{"unsafe name", strings.Replace(base, "name: ok", "name: ../../etc/passwd", 1), []string{`bad.yaml:1: name: "../../etc/passwd" is not a safe name`}},
		{"missing algorithm", "name: x\nlimit: 1/s\ntarget:\n  gateways: 3\ntraffic: {rate: 1/s}\n", []string{`bad.yaml:3: target.algorithm: missing`}},
		{"missing rate", "name: x\nlimit: 1/s\ntarget: {algorithm: redis-gcra}\ntraffic:\n  duration: 1s\n", []string{`bad.yaml:4: traffic.rate: missing`}},
		{"redis latency needs latency", base + "faults:\n  - {at: 1s, action: redis-latency}\n", []string{`bad.yaml:8: faults[0].latency: redis-latency needs latency`}},
		{"fault after the end", base + "faults:\n  - {at: 9s, action: redis-down}\n", []string{`bad.yaml:8: faults[0].at: 9s is not before the end of the run (5s)`}},
		{"gateway-down index", base + "faults:\n  - {at: 1s, action: gateway-down, gateway: 3}\n", []string{`bad.yaml:8: faults[0].gateway: gateway 3 does not exist (gateways 0 to 0)`}},
		{"password redacted", strings.Replace(base, "target:\n", "target:\n  redis: 'http://user:hunter2@host:1'\n", 1), []string{`bad.yaml:4: target.redis: want embedded, spawn, spawn-sentinel, spawn-cluster or a redis:// URL, got "http://user:xxxxx@host:1"`}},
		{"not a mapping", "- just\n- a list\n", []string{`bad.yaml:1: want a mapping, got a list`}},
		{"yaml syntax", "name: [unclosed\n", []string{`bad.yaml:`, `YAML:`}},
		{"merge key", "base: &b {a: 1}\n<<: *b\n", []string{`bad.yaml:2: merge keys (<<) are not supported`}},
		{"second document", base + "---\nname: two\nlimit: 1/s\ntarget: {algorithm: leasing}\ntraffic: {rate: x}\n", []string{`bad.yaml:11: traffic.rate: limit "x"`}},
		{"many mistakes capped", base + "thresholds: [" + strings.Repeat("bogus < 1, ", 80) + "]\n", []string{`bad.yaml:7: thresholds[0]`, `bad.yaml:7: and 30 more mistakes from here on`}},
		{"identities beyond the requests", base + "  duration: 2s\n  identities: 10000000\n", []string{`bad.yaml:8: traffic.identities: 10000000 identities: at most 1000000`}},
		{"identities beyond rate × duration", base + "  duration: 2s\n  identities: 1000\n", []string{`bad.yaml:8: traffic.identities: 1000 identities, but the run sends at most 200 requests (rate × duration)`}},
		{"identities beyond max_requests", base + "  max_requests: 50\n  identities: 60\n", []string{`bad.yaml:8: traffic.identities: 60 identities, but the run sends at most 50 requests (max_requests)`}},
		{"race identities × rounds", "name: r\nlimit: 5/1s\ntarget: {algorithm: redis-get-incr}\ntraffic:\n  pattern: race\n  max_requests: 1000\n  identities: 100\n", []string{`bad.yaml:7: traffic.identities: 100 identities × 50 race rounds need 5000 requests at the least`}},
		{"burst batch too large", "name: b\nlimit: 100/1s\ntarget: {algorithm: redis-gcra}\ntraffic:\n  pattern: burst\n  rate: 1/s\n  identities: 5000\n", []string{`bad.yaml:7: traffic.identities: 5000 identities fire 500000 requests at once`}},
		{"identities within the requests", base + "  identities: 500\n", nil},
		{"max_error_rate above one", base + "max_error_rate: 5\n", []string{`bad.yaml:7: max_error_rate: want a share from 0 to 1 (0.01 is 1%), got 5`}},
		{"max_error_rate not a number", base + "max_error_rate: lots\n", []string{`bad.yaml:7: max_error_rate: want a number, got "lots"`}},
		{"empty prefix", baseT + "  prefix: ''\n", []string{`bad.yaml:7: target.prefix: must not be empty`}},
		{"retry policy is fine", "name: c\nlimit: 10/1s\ntarget: {algorithm: redis-fixed-window}\ntraffic:\n  model: closed\n  concurrency: 4\n  retry: {honor: ratelimit-reset, backoff: constant, jitter: equal, delay: 50ms, max_attempts: 3}\n  think: 1s\n", nil},
		{"retry in the open model", base + "  retry: {honor: retry-after}\n", []string{`bad.yaml:7: traffic.retry: applies to the closed model only`}},
		{"think in the open model", base + "  think: 1s\n", []string{`bad.yaml:7: traffic.think: applies to the closed model only`}},
		{"unknown retry honor", "name: c\nlimit: 10/1s\ntarget: {algorithm: redis-fixed-window}\ntraffic:\n  model: closed\n  concurrency: 4\n  retry: {honor: never}\n", []string{`bad.yaml:7: traffic.retry.honor: unknown retry honor "never" (want one of retry-after, ratelimit-reset, fixed)`}},
		{"unknown retry jitter", "name: c\nlimit: 10/1s\ntarget: {algorithm: redis-fixed-window}\ntraffic:\n  model: closed\n  concurrency: 4\n  retry: {jitter: decorrelated}\n", []string{`bad.yaml:7: traffic.retry.jitter: unknown retry jitter "decorrelated" (want one of none, full, equal)`}},
		{"retry delay above its cap", "name: c\nlimit: 10/1s\ntarget: {algorithm: redis-fixed-window}\ntraffic:\n  model: closed\n  concurrency: 4\n  retry: {delay: 2s, max_delay: 1s}\n", []string{`bad.yaml:7: traffic.retry: retry delay 2s and max delay 1s`}},
		{"retry max_attempts zero is the default", "name: c\nlimit: 10/1s\ntarget: {algorithm: redis-fixed-window}\ntraffic:\n  model: closed\n  concurrency: 4\n  retry: {max_attempts: 0}\n", nil},
		{"unknown retry field", "name: c\nlimit: 10/1s\ntarget: {algorithm: redis-fixed-window}\ntraffic:\n  model: closed\n  concurrency: 4\n  retry: {attempts: 3}\n", []string{`bad.yaml:7: traffic.retry.attempts: unknown field`}},
		{"fewer clients than identities", "name: c\nlimit: 10/1s\ntarget: {algorithm: redis-fixed-window}\ntraffic:\n  model: closed\n  concurrency: 4\n  identities: 8\n  retry: {}\n", []string{`traffic.concurrency: 4 clients for 8 identities`}},
		{"key by source is fine", strings.Replace(baseT, "redis-fixed-window", "redis-gcra", 1) + "  key: source\n", nil},
		{"unknown key", baseT + "  key: cookie\n", []string{`bad.yaml:7: target.key: unknown limit key "cookie" (want one of identity, source)`}},
		{"sources without key source", baseT + "  sources: 1\n", []string{`bad.yaml:7: target.sources: applies with key: source only`}},
		{"sources beyond identities", strings.Replace(base, "target:\n", "target:\n  key: source\n  sources: 3\n", 1) + "  identities: 2\n", []string{`target.sources: want 1 to 2 (the identities), got 3`}},
		{"key on an http target", "name: h\nlimit: 1/s\ntarget:\n  kind: http\n  urls: [http://gw.example/]\n  key: source\ntraffic: {rate: 1/s}\n", []string{`bad.yaml:6: target.key: an http target's gateways key their limit themselves`}},
		{"several mistakes collected", "name: x\nlimit: 1/s\ntarget:\n  algorithm: nope\n  gateways: -1\ntraffic:\n  rate: 1/s\n  spread: wide\n", []string{
			`bad.yaml:4: target.algorithm: unknown algorithm "nope"`,
			`bad.yaml:5: target.gateways: want an integer from 0 to 65535, got -1`,
			`bad.yaml:8: traffic.spread: unknown spread "wide"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := scenario.Parse([]byte(tt.yaml), "bad.yaml")
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("want no error, got:\n%v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error mentioning %q, got none", tt.want)
			}
			if exitcode.Of(err) != exitcode.Usage {
				t.Errorf("exit code %d, want %d (usage)", exitcode.Of(err), exitcode.Usage)
			}
			msg := err.Error()
			if strings.Contains(msg, "hunter2") {
				t.Errorf("error shows a password: %s", msg)
			}
			rest := msg
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("error does not contain %q (in order); got:\n%s", w, msg)
				}
				rest = rest[i+len(w):]
			}
			var list scenario.Errors
			if !errors.As(err, &list) || len(list) == 0 {
				t.Errorf("want an Errors list, got %T %v", err, err)
			}
			for _, e := range list {
				if e.File != "bad.yaml" || e.Line < 1 {
					t.Errorf("error without file:line: %+v", e)
				}
			}
		})
	}
}

// A YAML error on a line with a template in braces outside quotes says to
// quote it; one whose braces are quoted, or in a comment, gets the hint of
// its own mistake instead (here an unclosed list or mapping).
func TestUnquotedTemplateHint(t *testing.T) {
	const hint = "a value with a template in braces must be quoted"
	for line, want := range map[string]bool{
		"  urls: [http://gw/users/{id}]":      true,
		"  keys: [rl:{{{id}}}:n]":             true,
		`  urls: ["http://gw/users/{id}"`:     false,
		"  headers: {Authorization: 'B {id}'": false,
		"  urls: [http://gw/ # {id} later":    false,
		"  traffic: {rate: 1/s":               false,
	} {
		_, err := scenario.Parse([]byte("name: a\ntarget:\n"+line+"\nlimit: 1/s\n"), "bad.yaml")
		if err == nil {
			t.Errorf("%q: no error", line)
		} else if got := strings.Contains(err.Error(), hint); got != want {
			t.Errorf("%q: %v, want hint %v", line, err, want)
		}
	}
}
