package scenarios_test

import (
	"testing"

	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/scenarios"
)

func TestSuiteLoads(t *testing.T) {
	scs, err := scenario.LoadFS(scenarios.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scs {
		t.Log(s.Name, s.Traffic, s.Thresholds)
	}
}
