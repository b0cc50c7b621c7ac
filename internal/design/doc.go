// Package design names what a scenario puts under test: the limiter
// designs (algorithms), the failure policies around them, whose clock
// decides, and what a scenario shows about its design. The names are a
// contract: scenario files write them, limiter builds what they name and
// reports print them; they live here so the file format needs no engine.
package design
