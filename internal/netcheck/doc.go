// Package netcheck tells whether a pooled keep-alive connection can still
// be used, for rlctl's own clients (the hotpath pool on the decision path and
// the http target's connections): a connection the server closed must be replaced
// before a request is lost on it, since a lost request is recorded as an
// error of the system under test (a decision that fails open, an HTTP
// error), whatever the time since the connection was last used.
package netcheck
