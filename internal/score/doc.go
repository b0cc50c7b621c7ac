// Package score decides every verdict rlctl gives. From what a scenario
// claims (Claim) and what its run measured and did (Facts) it decides,
// through one validity table (Checks), whether the run measured what the
// scenario claims; then which thresholds held, what the scenario's status
// and exit code are, and what that means in words. Suite does the same for
// a whole run.
//
// It is pure: no Redis, no network, no files. The conductor (verify, and
// report render and merge) gathers the facts; report renders what score
// decided and never judges.
package score
