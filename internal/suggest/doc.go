// Package suggest finds the names nearest to a mistyped one, for "did you
// mean" in messages: a command, a scenario field or value, a metric. It is
// a leaf package so every layer words a near miss the same way.
package suggest
