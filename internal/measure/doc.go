// Package measure runs one limiter design on the embedded Redis and
// measures its ceiling, to put beside the theory of package ceiling
// (`rlctl ceiling --measure`).
//
// A measurement is planned before it runs (NewPlan): it covers at least one
// whole window of the published limit unless asked for a shorter span, and
// what this machine cannot measure — a decision rate the embedded Redis
// cannot keep up with, more decisions or memory than stated bounds, a
// window too long to wait for — is refused up front with the reason and
// what would work, rather than run out of memory or print a figure bounded
// by the offered load instead of the limiter. Every Result says which span
// its figure covers and carries the theory for that span.
//
// It sits above verify (it runs a scenario through it), and so beside, not
// inside, package ceiling, which verify itself imports.
package measure
