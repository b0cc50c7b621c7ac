// Package metric names the figures a run measures and says what each
// means. The names are a contract: analysis computes them, scenario
// thresholds read them and report.json keys them, so adding a metric is
// one change here (its name, its place in Names, its Description).
package metric
