// Package arch holds no code: its test states which rlctl package may
// import which (DESIGN.md's layout and one-way data flow) and fails on a
// new wrong arrow, so the boundaries hold by test, not by discipline.
package arch
