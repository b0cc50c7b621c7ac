package scenario_test

import (
	"errors"
	"github.com/rlctl/rlctl/internal/scenario"
	"strings"
	"testing"
)

// want is one error a file must give: where, which field, and words of
// its message.
type want struct {
	line int
	path string
	msg  string
}

// TestMistakesPointAtTheCause: each mistake is reported once, at its own
// file, line and field, with the nearest right names, and nothing is
// reasoned from a default standing in for a value that failed to decode.
func TestMistakesPointAtTheCause(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		yaml string
		want []want // every error of the file, in order
	}{
		{"a misspelt kind, alone", "name: x\nlimit: 10/1s\ntarget:\n  kind: https\n  urls: [\"https://gw.example/\"]\ntraffic: {rate: 100/s}\n",
			[]want{{4, "target.kind", `unknown target kind "https"; did you mean "http"? (want one of simulated, http, redis-script)`}}},
		{"a misspelt kind without urls", "name: x\nlimit: 10/1s\ntarget: {kind: redis-scrpt, script: x.lua}\ntraffic: {rate: 100/s}\n",
			[]want{{3, "target.kind", `unknown target kind "redis-scrpt"; did you mean "redis-script"?`}}},
		{"a misspelt algorithm", "name: x\nlimit: 10/1s\ntarget:\n  algorithm: redis-fixed-windw\ntraffic: {rate: 100/s}\n",
			[]want{{4, "target.algorithm", `unknown algorithm "redis-fixed-windw"; did you mean "redis-fixed-window"?`}}},
		{"redis at the top level", "name: x\nlimit: 10/1s\nredis: spawn\ntarget: {algorithm: redis-gcra}\ntraffic: {rate: 100/s}\n",
			[]want{{3, "redis", `unknown field; did you mean "target.redis"? (want one of description,`}}},
		{"algorithm under traffic", "name: x\nlimit: 10/1s\ntarget: {algorithm: redis-gcra}\ntraffic:\n  rate: 100/s\n  algorithm: leasing\n",
			[]want{{6, "traffic.algorithm", `unknown field; did you mean "target.algorithm"?`}}},
		{"timeout under traffic, shallowest first", "name: x\nlimit: 10/1s\ntarget: {algorithm: redis-gcra}\ntraffic: {rate: 100/s, timeout: 1s}\n",
			[]want{{4, "traffic.timeout", `unknown field; did you mean "target.timeout" or "target.endpoints[].timeout"?`}}},
		{"a misspelt field", "name: x\nlimit: 10/1s\ntarget: {algorithm: redis-gcra}\ntraffic:\n  rate: 100/s\n  duraton: 1s\n",
			[]want{{6, "traffic.duraton", `unknown field; did you mean "duration"?`}}},
		{"a misspelt endpoint field", "name: x\nlimit: 10/1s\ntarget:\n  algorithm: redis-gcra\n  endpoints:\n    - {name: a, share: 1, on_eror: closed}\ntraffic: {rate: 100/s}\n",
			[]want{{6, "target.endpoints[0].on_eror", `unknown field; did you mean "on_error"?`}}},
		{"a field with nothing near", "name: x\nlimit: 10/1s\ntarget: {algorithm: redis-gcra}\ntraffic: {rate: 100/s}\nzzqqxx: 1\n",
			[]want{{5, "zzqqxx", "unknown field (want one of description,"}}},
		{"an unknown metric, nearest first", "name: x\nlimit: 10/1s\ntarget: {algorithm: redis-gcra}\ntraffic: {rate: 100/s}\nthresholds:\n  - ceiling <= limit\n  - ceilng_upper <= 2*limit\n",
			[]want{{7, "thresholds[1]", `unknown name "ceilng_upper"; did you mean "ceiling_upper"? (rlctl help metrics lists every metric)`}}},
		{"an unclosed { on its own line", "name: x\nlimit: 10/1s\ntarget: {algorithm: redis-gcra\ntraffic:\n  rate: 100/s\n",
			[]want{{3, "", "YAML: did not find expected ',' or '}' (a {...} mapping is not closed"}}},
		{"an unclosed { in a list", "name: x\nlimit: 10/1s\ntarget:\n  algorithm: redis-gcra\n  endpoints:\n    - {name: a, share: 1\ntraffic:\n  rate: 100/s\n",
			[]want{{6, "", "YAML: did not find expected ',' or '}'"}}},
		{"an unclosed [", "name: x\nlimit: 10/1s\nthresholds: [allowed > 0\ntraffic: {rate: 1/s}\n",
			[]want{{3, "", "YAML: did not find expected ',' or ']'"}}},
		{"a scanner error keeps its line", "name: x\nlimit: a: b\n",
			[]want{{2, "", "YAML: mapping values are not allowed in this context"}}},
		{"an unclosed quote keeps its line", "name: x\nlimit: 10/1s\ntarget: \"abc\ntraffic: 1\n",
			[]want{{3, "", "YAML: found unexpected end of stream"}}},
		{"request_timeout on a simulated target", "name: x\nlimit: 10/1s\ntarget:\n  algorithm: redis-gcra\n  request_timeout: 2s\ntraffic: {rate: 100/s}\n",
			[]want{{5, "target.request_timeout", "applies to http targets only, not simulated"}}},
		{"timeout and request_timeout on an http target", "name: x\nlimit: 10/1s\ntarget:\n  kind: http\n  urls: [\"http://gw.example/\"]\n  timeout: 1s\n  request_timeout: 2s\ntraffic: {rate: 100/s}\n",
			[]want{{6, "target.timeout", "an http target's requests are bounded by request_timeout"}}},
		{"show_query naming no parameter", "name: x\nlimit: 10/1s\ntarget:\n  kind: http\n  urls: [\"http://gw.example/?page=2&sid=s\"]\n  show_query: [pgae]\ntraffic: {rate: 100/s}\n",
			[]want{{6, "target.show_query[0]", `"pgae" is a query parameter of none of the urls; did you mean "page"?`}}},
		{"show_query and redact naming one parameter", "name: x\nlimit: 10/1s\ntarget:\n  kind: http\n  urls: [\"http://gw.example/?page=2\"]\n  redact: [page]\n  show_query: [page]\ntraffic: {rate: 100/s}\n",
			[]want{{7, "target.show_query[0]", `"page" is also in redact`}}},
		{"show_query on a simulated target", "name: x\nlimit: 10/1s\ntarget:\n  algorithm: redis-gcra\n  show_query: [page]\ntraffic: {rate: 100/s}\n",
			[]want{{5, "target.show_query", "applies to http targets only"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := scenario.Parse([]byte(tt.yaml), "bad.yaml")
			var got scenario.Errors
			if !errors.As(err, &got) {
				t.Fatalf("want Errors, got %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%d errors, want %d:\n%v", len(got), len(tt.want), err)
			}
			for i, w := range tt.want {
				g := got[i]
				if g.File != "bad.yaml" || g.Line != w.line || g.Path != w.path || !strings.Contains(g.Msg, w.msg) {
					t.Errorf("error %d = %s:%d %q %q, want bad.yaml:%d %q containing %q", i, g.File, g.Line, g.Path, g.Msg, w.line, w.path, w.msg)
				}
			}
		})
	}
}
