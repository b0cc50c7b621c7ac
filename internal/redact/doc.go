// Package redact hides credentials in URLs before they reach output, logs,
// errors, reports or saved histories: a password in the user info, and the
// values of query parameters whose names look like credentials (token,
// key, secret, signature, password, auth …), plus any names a scenario
// adds. It is a leaf package so every layer that writes a URL uses the
// same rule.
package redact
