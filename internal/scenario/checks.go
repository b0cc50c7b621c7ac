package scenario

import "strings"

// Checks are the rules of fields whose syntax belongs to the targets that
// read them at run time: an http target's URLs and identity source, a
// redis-script target's key templates and reply rules. The file format
// does not know them; the caller passes them in (target.Checks() has them
// all) and validation applies each to its field, so a mistake is still
// reported at load with file, line and field. A nil check is skipped.
type Checks struct {
	// URL checks one of target.urls.
	URL func(raw string) error
	// Source checks target.identity.source: a prefix with room for n
	// identities.
	Source func(prefix string, n int) error
	// Template checks one of target.keys or target.args.
	Template func(tpl string) error
	// Allowed checks target.allowed.
	Allowed func(rule string) error
	// RetryAfter checks target.retry_after.
	RetryAfter func(rule string) error
	// Schema checks target.schema: a key layout rlctl can read.
	Schema func(name string) error
	// Replicates says whether a simulated design can wait for replicas
	// (target.replicate).
	Replicates func(algorithm string) bool
}

// idPlaceholder stands for the identity in an http target's urls, headers
// and body.
const idPlaceholder = "{id}"

// carriesID reports whether an http target's URLs, headers or body carry
// the identity as {id}: then it needs no identity header or parameter.
func (t *Target) carriesID() bool {
	for _, u := range t.URLs {
		if strings.Contains(u, idPlaceholder) {
			return true
		}
	}
	for _, v := range t.Headers {
		if strings.Contains(v, idPlaceholder) {
			return true
		}
	}
	return strings.Contains(t.Body, idPlaceholder)
}
