// Package design is the registry every package reads limiter designs
// from, and the names a scenario puts under test around them: failure
// policies, whose clock decides, what a scenario shows, fault actions.
//
// Each design is one file here (its name, the summary `rlctl help
// scenarios` prints, where its state lives, whose clock decides its
// window, its key schema, its ceiling theory and envelope, how
// counts_lost reads its counters, the scenario options it accepts and
// the note its figures need), listed once in registry.go; Lookup and All
// read it. The names are a contract: scenario files write them, limiter
// builds what they name and reports print them. The package imports only
// the standard library and rate, so the file format needs no engine.
package design
