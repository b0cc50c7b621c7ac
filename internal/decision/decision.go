package decision

import "fmt"

// Outcome is what happened to one request.
type Outcome uint8

const (
	// Unknown is the zero value; it never appears in a finished record.
	Unknown Outcome = iota
	// Allowed: the limiter admitted the request.
	Allowed
	// Denied: the limiter refused it (HTTP 429 or the script said no).
	Denied
	// Error: no decision came back (timeout, connection refused, 5xx).
	Error
	// Dropped: the traffic engine had no free worker at the intended time,
	// so the request was never sent (open model; never silently delayed).
	Dropped
)

var outcomeNames = [...]string{"unknown", "allowed", "denied", "error", "dropped"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", o)
}

// By says which path of a limiter decided. The names are a contract: they
// appear in reports and in DESIGN.md.
type By uint8

const (
	// ByUnknown: the target did not say (an HTTP gateway usually does not).
	ByUnknown By = iota
	// ByRedis: the shared state in Redis decided.
	ByRedis
	// ByLocal: the gateway's own memory decided (local designs).
	ByLocal
	// ByFailOpen: Redis failed and the policy admitted the request.
	ByFailOpen
	// ByFailClosed: Redis failed and the policy refused it.
	ByFailClosed
	// ByFallback: Redis failed and a smaller local allowance decided.
	ByFallback
	// ByLease: a locally held lease slice decided (leasing).
	ByLease
	// ByUnanswered marks an error after the request reached the target (an
	// HTTP 5xx, a timeout or a connection lost while waiting): the limiter
	// may have admitted and counted it, though no answer said so.
	ByUnanswered
	// ByFailoverDeny: the gateway detected a failover (on_failover: deny)
	// and refused for one window, whatever the new primary holds.
	ByFailoverDeny
)

var byNames = [...]string{"", "redis", "local", "fail-open", "fail-closed", "fallback", "lease", "unanswered", "failover-deny"}

func (b By) String() string {
	if int(b) < len(byNames) {
		return byNames[b]
	}
	return fmt.Sprintf("by(%d)", b)
}

// ParseBy returns the By named s ("redis", "fail-open", ...).
func ParseBy(s string) (By, bool) {
	for i, n := range byNames {
		if n == s && i > 0 {
			return By(i), true
		}
	}
	return ByUnknown, false
}
