package scenario

import (
	"time"

	"github.com/rlctl/rlctl/internal/design"
)

// MaxReplicate bounds target.replicate: WAIT for more replicas than a
// deployment plausibly has is a typo.
const MaxReplicate = 16

// defaultReplicateTimeout is WAIT's timeout when the file gives none: half
// the shortest endpoint timeout (whole milliseconds, at least 1ms), so the
// answer of a WAIT that timed out still reaches the gateway before its
// policy gives up on the call.
func defaultReplicateTimeout(eps []Endpoint) time.Duration {
	shortest := time.Duration(0)
	for _, e := range eps {
		if e.Timeout > 0 && (shortest == 0 || e.Timeout < shortest) {
			shortest = e.Timeout
		}
	}
	return max(time.Millisecond, (shortest / 2).Truncate(time.Millisecond))
}

// checkReplicate validates target.replicate and replicate_timeout.
func checkReplicate(t *Target, set func(string) bool, bad func(path, format string, args ...any)) {
	if set("target.replicate_timeout") && t.Replicate == 0 {
		bad("target.replicate_timeout", "applies with replicate only")
	}
	if t.Replicate == 0 {
		return
	}
	if t.Kind != KindSimulated || !design.Of(t.Algorithm).Accepts.Replicate {
		bad("target.replicate", "applies to the simulated Lua designs only (one script, one write per decision), not %s", t.String())
		return
	}
	if t.ReplicateTimeout < time.Millisecond || t.ReplicateTimeout%time.Millisecond != 0 {
		bad("target.replicate_timeout", "want a whole number of milliseconds, at least 1ms (WAIT counts in ms; 0 would wait forever), got %v", t.ReplicateTimeout)
		return
	}
	for i, e := range t.Endpoints {
		if e.Timeout > 0 && t.ReplicateTimeout >= e.Timeout {
			bad(index("target.endpoints", i)+".timeout", "%v leaves WAIT (replicate_timeout %v) no time to answer: make the timeout longer than replicate_timeout", e.Timeout, t.ReplicateTimeout)
		}
	}
}
