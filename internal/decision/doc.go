// Package decision names the two small facts every limiter decision and
// every recorded request share: what happened to the request (Outcome) and
// which path of the limiter decided it (By). It is a leaf package so the
// limiter, the traffic engine, the history and the reports agree on these
// names without importing each other. It also holds the two response
// headers through which rlctl's HTTP gateway tells a client what decided
// and when.
package decision
