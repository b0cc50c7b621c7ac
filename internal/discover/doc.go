// Package discover infers the rate-limit policy an unknown endpoint
// enforces from the answers to probes of its own: bursts, polls for the
// reset, paced trains, probes placed at chosen phases of a suspected
// window, and the same identity spread over several URLs.
//
// Every probe goes out as a fresh identity of the run's own (so no real
// user's quota is spent), through a traffic.Target (the http target for
// `rlctl discover`), and every identity is held to the request budget:
// no identity is ever sent more than Options.Budget requests, and the
// whole run ends by Options.MaxDuration. Each inferred figure carries
// the evidence it was read from and a confidence, and what the probes
// cannot tell apart within their budget is said, not guessed.
package discover
