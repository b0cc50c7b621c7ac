// Package workload names the shapes of load a run can send: the load
// models, traffic patterns, window alignments and spreads over gateways,
// and the retry policy of clients that obey their answers, with its
// defaults and checks. Scenario files write these names and the traffic
// engine runs them; they live here so the file format needs no engine.
package workload
