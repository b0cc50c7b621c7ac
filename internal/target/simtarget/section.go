package simtarget

import (
	"fmt"
	"strings"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/scenario"
)

// section is the simulated kind's part of the scenario format. Its fields
// (algorithm, clock, capacity, pause, prefix, lease, replicate) are the
// design's options, which package scenario checks against the design
// registry; the section adds the rule that a design is named, and the
// target's description.
var section = scenario.Section{
	Kind: scenario.KindSimulated,
	Doc:  "gateways run in-process, each with its own Redis connection and clock, running target.algorithm",
	Validate: func(c scenario.Check, sc *scenario.Scenario) {
		if !c.Set("target.algorithm") {
			c.Errorf("target.algorithm", "missing: a simulated target needs an algorithm (one of %s)", strings.Join(design.Names(), ", "))
		}
	},
	Describe: describe,
}

// describe says what a simulated target runs: "simulated
// redis-fixed-window ×50, skew ±20ms".
func describe(t scenario.Target) string {
	s := fmt.Sprintf("%s %s ×%d", t.Kind, t.Algorithm, t.Gateways)
	if t.Clock != "" {
		s += ", clock " + t.Clock
	}
	if t.ClockSkew > 0 {
		s += fmt.Sprintf(", skew ±%s", t.ClockSkew)
	}
	if t.Replicate > 0 {
		s += fmt.Sprintf(", replicate %d", t.Replicate)
	}
	if t.Key == scenario.KeySource {
		s += fmt.Sprintf(", keyed by source address (%d)", t.Sources)
	}
	return s
}
