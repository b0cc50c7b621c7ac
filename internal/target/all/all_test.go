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

// Every kind a scenario may name is built by a registered kind, and no
// registered kind is one a scenario cannot name.
func TestEveryScenarioKindIsRegistered(t *testing.T) {
	want := slices.Sorted(slices.Values(scenario.Kinds))
	if got := target.Names(); !slices.Equal(got, want) {
		t.Fatalf("registered kinds %v, scenario kinds %v", got, want)
	}
}

// The registered kinds' load-time checks reach the scenario loader: a bad
// URL, key template and reply rule are each refused at load, naming the
// field.
func TestChecksComeFromTheKinds(t *testing.T) {
	c := target.Checks()
	if c.URL == nil || c.Source == nil || c.Template == nil || c.Allowed == nil || c.RetryAfter == nil || c.Replicates == nil || c.Schema == nil {
		t.Fatalf("a kind's check is missing: %+v", c)
	}
	if err := c.URL("ftp://example.com"); err == nil {
		t.Error("an ftp URL passed the http kind's check")
	}
	if err := c.Schema("no-such-layout"); err == nil {
		t.Error("an unknown key layout passed the http kind's check")
	}
	if err := c.Allowed("== "); err == nil {
		t.Error("an empty reply rule passed the redis-script kind's check")
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
