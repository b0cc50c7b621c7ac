// Package traffictest holds the checks that tests of the engine and of
// the targets share: outcome counts, and the shape every race and boundary
// run must have whatever the target.
package traffictest
