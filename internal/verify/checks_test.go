package verify

import (
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/scenario"
)

// TestChecksAtLoad: the targets' own parsers check their fields when a
// scenario loads, each mistake named with file, line and field; without
// the checks the file format alone lets them through.
func TestChecksAtLoad(t *testing.T) {
	t.Parallel()
	doc := `name: h
limit: 10/s
target: {kind: http, urls: ["ftp://x/{id}"], identity: {source: "10.0.0.1/32"}}
traffic: {rate: 10/s, identities: 2}
---
name: s
limit: 10/s
target:
  kind: redis-script
  script: testdata/none.lua
  keys: ["rl:{nope}"]
  allowed: "=~ 1"
  retry_after: "[0] ms"
traffic: {rate: 10/s}
`
	_, err := scenario.Parse([]byte(doc), "c.yaml", Checks)
	if err == nil {
		t.Fatal("bad target fields loaded")
	}
	for _, want := range []string{
		"c.yaml:3: target.urls[0]", "c.yaml:3: target.identity: source:",
		"c.yaml:11: target.keys", "c.yaml:12: target.allowed", "c.yaml:13: target.retry_after",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("no %q in:\n%v", want, err)
		}
	}
	_, err = scenario.Parse([]byte(doc), "c.yaml", scenario.Checks{})
	for _, field := range []string{"target.urls", "target.identity", "target.keys", "target.allowed", "target.retry_after"} {
		if err != nil && strings.Contains(err.Error(), field) {
			t.Errorf("without checks %s was still checked:\n%v", field, err)
		}
	}
}
