package scenario

import "github.com/rlctl/rlctl/internal/traffic"

// checks are the targets' rules, wired as verify.Checks wires them, so the
// tests load scenarios as rlctl does.
var checks = Checks{
	URL: traffic.CheckURL,
	Source: func(prefix string, n int) error {
		_, err := traffic.SourceAddrs(prefix, n)
		return err
	},
	Template: traffic.CheckTemplate,
	Allowed: func(rule string) error {
		_, err := traffic.ParseRule(rule)
		return err
	},
	RetryAfter: func(rule string) error {
		_, err := traffic.ParseRetryRule(rule)
		return err
	},
}
