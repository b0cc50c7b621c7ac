// Package verify runs one scenario end to end: it builds the target
// (simulated gateways on the embedded, spawned or given Redis; real HTTP
// gateways; the user's own Lua script), schedules the scenario's faults on
// the run's clock (set up by fault/inject), fires the traffic, analyses the history and checks the
// thresholds, returning a report.Scenario and the raw history. A run that
// is one segment of several (Options.Segment, Options.StartAt) also reads
// its clock against a reference every machine shares (clock.go), so the
// merge of the machines' runs can put them on one time line.
// OpenGateways builds the same simulated gateways for serving over HTTP
// (rlctl gateway serve), so a run and a served gateway get them one way.
//
// Data flows one way: scenario → verify → (gateway → limiter) via traffic →
// history → analysis → report. verify knows nothing of the command line.
package verify
