package all_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/target"
	_ "github.com/rlctl/rlctl/internal/target/all"
)

// The kinds rlctl ships are registered, each with the section of the file
// format it reads, and the file format knows no kind nothing builds.
func TestEveryScenarioKindIsRegistered(t *testing.T) {
	want := []string{scenario.KindHTTP, scenario.KindRedisScript, scenario.KindSimulated}
	if got := target.Names(); !slices.Equal(got, want) {
		t.Fatalf("registered kinds %v, want %v", got, want)
	}
	// The file format lists its default kind first.
	want = []string{scenario.KindSimulated, scenario.KindHTTP, scenario.KindRedisScript}
	if got := scenario.Kinds(); !slices.Equal(got, want) {
		t.Fatalf("the file format knows kinds %v, want %v", got, want)
	}
}

// Each kind checks its own fields at load with the parsers its target
// runs: a bad URL, key layout, identity source, key template, reply rule
// and retry rule are each refused, naming file, line and field.
func TestKindsCheckTheirOwnFields(t *testing.T) {
	doc := `name: h
limit: 1/s
target:
  kind: http
  urls: [http://ok/, ftp://example.com/]
  identity: {source: 10.0.0.0/33}
  redis: redis://127.0.0.1:1
  schema: no-such-layout
traffic: {rate: 1/s}
---
name: s
limit: 1/s
target:
  kind: redis-script
  script: ../../scenario/testdata/scripts/limit.lua
  keys: ['rl:{nope}']
  allowed: '== '
  retry_after: '[x] ms'
traffic: {rate: 1/s}
`
	_, err := scenario.Parse([]byte(doc), "c.yaml")
	if err == nil {
		t.Fatal("loaded")
	}
	for _, want := range []string{
		"c.yaml:5: target.urls[1]: ", "c.yaml:6: target.identity: source: ", "c.yaml:8: target.schema: ",
		"c.yaml:16: target.keys: ", "c.yaml:17: target.allowed: ", "c.yaml:18: target.retry_after: ",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("no %q in:\n%v", want, err)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 6 {
		t.Errorf("%d errors, want 6:\n%v", n, err)
	}
}

// A kind nothing registered is a usage error naming the kinds there are,
// not a panic or a run of some other kind.
func TestBuildUnknownKindIsUsage(t *testing.T) {
	_, err := target.Build(context.Background(), target.Spec{Name: "x", Target: scenario.Target{Kind: "carrier-pigeon"}})
	if err == nil || exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), scenario.KindHTTP) {
		t.Fatalf("err %v (exit %d); want a usage error listing the kinds", err, exitcode.Of(err))
	}
}
