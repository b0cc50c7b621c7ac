// Package redact hides credentials in URLs before they reach output, logs,
// errors, reports or saved histories: a password in the user info, and
// query values. An http target's URL (TargetURL) shows no query value but
// those the scenario marks safe; other URLs (Redis's, URL) hide the values
// of parameters whose names look like credentials (token, key, secret,
// signature, password, auth …). It is a leaf package so every layer that
// writes a URL uses the same rule.
package redact
