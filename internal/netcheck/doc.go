// Package netcheck tells whether an idle keep-alive connection can still
// be used, for rlctl's own clients (the resp pool on the decision path and
// the raw HTTP client): a connection the server closed for idleness must
// be replaced before a request is lost on it, since a lost request is
// recorded as an error of the system under test.
package netcheck
