package scenario

import (
	"errors"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/design"
)

// checks stand in for the targets' parsers (target.Checks(), tested there):
// each refuses a value containing "bad".
var checks = Checks{
	URL:        refuseBad,
	Source:     func(prefix string, _ int) error { return refuseBad(prefix) },
	Template:   refuseBad,
	Allowed:    refuseBad,
	RetryAfter: refuseBad,
	// The Lua designs replicate: one script, one write per decision.
	Replicates: func(a string) bool { return strings.HasPrefix(a, "redis-") && a != design.RedisGetIncr },
}

func refuseBad(s string) error {
	if strings.Contains(s, "bad") {
		return errors.New("refused " + s)
	}
	return nil
}

// TestChecksApplied: each check of Checks is applied to its field, and its
// error is reported with the file, the field's line and its path; without
// checks the same file loads.
func TestChecksApplied(t *testing.T) {
	t.Parallel()
	doc := `name: h
limit: 1/s
target:
  kind: http
  urls: [http://ok/, http://bad/]
  identity: {source: bad-prefix}
traffic: {rate: 1/s}
---
name: s
limit: 1/s
target:
  kind: redis-script
  script: testdata/scripts/limit.lua
  keys: ['rl:{id}']
  args: [bad]
  allowed: 'bad'
  retry_after: 'bad'
traffic: {rate: 1/s}
`
	_, err := Parse([]byte(doc), "c.yaml", checks)
	if err == nil {
		t.Fatal("loaded")
	}
	for _, want := range []string{
		"c.yaml:5: target.urls[1]: refused http://bad/", "c.yaml:6: target.identity: source: refused bad-prefix",
		"c.yaml:15: target.args: \"bad\": refused bad", "c.yaml:16: target.allowed: refused bad", "c.yaml:17: target.retry_after: refused bad",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("no %q in:\n%v", want, err)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 5 {
		t.Errorf("%d errors, want 5:\n%v", n, err)
	}
	if _, err := Parse([]byte(doc), "c.yaml", Checks{}); err != nil {
		t.Errorf("without checks: %v", err)
	}
}
