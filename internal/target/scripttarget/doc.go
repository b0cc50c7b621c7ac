// Package scripttarget is the target of the user's own Lua limiter: each
// request runs the script through one of N simulated gateways, each with its
// own Redis client, with keys and arguments from templates ({id},
// {now_ms}, ...), and a rule on the reply says allowed or denied (ParseRule)
// and where a retry-after is (ParseRetryRule). A reply the rule cannot
// read is an error, never an admission.
//
// Watch runs a script first on a server rlctl starts and reports what it
// touches beyond its KEYS, before it meets a Redis rlctl did not start. A
// call that times out has its script stopped with SCRIPT KILL once the
// server answers BUSY (Settler says what was done).
package scripttarget
