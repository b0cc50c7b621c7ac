// Package scripttarget is the target of the user's own Lua limiter: each
// request runs the script through one of N simulated gateways, each with its
// own Redis client, with keys and arguments from templates ({id},
// {now_ms}, ...), and a rule on the reply says allowed or denied (ParseRule)
// and where a retry-after is (ParseRetryRule).
package scripttarget
