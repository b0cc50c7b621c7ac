package simtarget

import (
	"fmt"
	"strings"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/scenario"
)

// section is the simulated kind's part of the scenario format: the design
// its gateways run and that design's options. They stay fields of
// scenario.Target (Algorithm, Clock, Pause, Prefix, Capacity, Lease), since
// reports and the ceiling read the design under test too; which options
// apply comes from the design registry.
var section = scenario.Section{
	Kind: scenario.KindSimulated,
	Doc:  "gateways run in-process, each with its own Redis connection and clock, running target.algorithm",
	Fields: func(d scenario.Decoder, t *scenario.Target, _ any) map[string]scenario.Handler {
		return map[string]scenario.Handler{
			"algorithm": d.Enum(&t.Algorithm, "algorithm", design.Names()),
			"clock":     d.Enum(&t.Clock, "clock", []string{design.ClockGateway, design.ClockRedis}),
			"pause":     d.Duration(&t.Pause),
			"prefix":    d.String(&t.Prefix),
			"capacity":  d.Count(&t.Capacity),
			"lease": d.Mapping(map[string]scenario.Handler{
				"size":         d.Count(&t.Lease.Size),
				"refill_below": d.Number(&t.Lease.RefillBelow),
				"adaptive":     d.Bool(&t.Lease.Adaptive),
			}),
		}
	},
	Docs:      docs,
	ValueDocs: valueDocs(),
	Defaults: func(t *scenario.Target, set func(string) bool) {
		if t.Prefix == "" && !set("target.prefix") {
			t.Prefix = design.DefaultPrefix
		}
		if design.Of(t.Algorithm).Accepts.Lease && !set("target.lease.refill_below") {
			t.Lease.RefillBelow = design.DefaultRefillBelow
		}
	},
	Validate: validate,
	Describe: describe,
}

func validate(c scenario.Check, sc *scenario.Scenario) {
	t := &sc.Target
	bad := c.Errorf
	if !c.Set("target.algorithm") {
		bad("target.algorithm", "missing: a simulated target needs an algorithm (one of %s)", strings.Join(design.Names(), ", "))
	}
	dd := design.Of(t.Algorithm)
	if sc.Requires == scenario.RequireCluster && dd.State == design.StateLocal {
		bad("requires", "cluster needs a design that keeps its state in Redis; %s keeps it in each gateway's memory", t.Algorithm)
	}
	if t.Prefix == "" {
		// A reset fault deletes prefix*; an empty prefix would be everything.
		bad("target.prefix", "must not be empty: the limiter's keys need a prefix of their own")
	}
	if c.Set("target.lease") && !dd.Accepts.Lease {
		bad("target.lease", "applies to the leasing algorithm only")
	}
	if rb := t.Lease.RefillBelow; rb < 0 || rb >= 1 {
		bad("target.lease.refill_below", "want a fraction from 0 to below 1, got %v", rb)
	}
	if c.Set("target.pause") && !dd.Accepts.Pause {
		bad("target.pause", "applies to redis-get-incr only")
	}
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

// valueDocs say what each design and each clock is, for help.
func valueDocs() map[string]map[string]string {
	designs := map[string]string{}
	for _, d := range design.All() {
		designs[d.Name] = d.Summary
	}
	return map[string]map[string]string{
		"target.algorithm": designs,
		"target.clock": {
			design.ClockGateway: "each gateway's own clock, offset by clock_skew, is passed to the script",
			design.ClockRedis:   "the script reads Redis TIME: one clock decides for every gateway",
		},
	}
}

// docs document the simulated kind's fields for rlctl help scenarios.
var docs = []scenario.FieldDoc{
	{Path: "target.algorithm", Doc: "The limiter design the simulated gateways run (simulated only; required there)."},
	{Path: "target.clock", Doc: "Whose clock a design reads: gateway (each gateway's own, possibly skewed, passed to the script) or redis (TIME inside the script: one clock for all). Default: redis for redis-gcra and leasing, gateway for the others."},
	{Path: "target.pause", Doc: "redis-get-incr only: the gap between its GET and its INCR, the window the race lives in. Default 0s."},
	{Path: "target.prefix", Doc: "The prefix of every limiter key (simulated only). Default rl:."},
	{Path: "target.capacity", Doc: "A token bucket's or GCRA's capacity (its burst). Default: the limit's count."},
	{Path: "target.lease", Doc: "Leasing only: how gateways lease slices of the global budget."},
	{Path: "target.lease.size", Doc: "The slice a gateway leases per top-up. Default: the design's own, from the limit."},
	{Path: "target.lease.refill_below", Doc: "A gateway tops up in the background when less than this share of its slice is left (0 to below 1). Default 0.2."},
	{Path: "target.lease.adaptive", Doc: "Size slices by each gateway's recent demand instead of equally. Default false."},
}
