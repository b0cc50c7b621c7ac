// Package httptarget is the target of real HTTP gateways: requests with the
// identity in a header, the query, the path or the source address, answers
// read as allowed, denied or errors with the rate-limit header fields they
// carried (ParseHints). Plain http:// goes through a keep-alive HTTP/1.1
// client of its own (rawhttp.go); https:// through net/http, with
// connections handshaken ahead (warmdial.go), so no dial lands inside a
// measured request.
//
// Against the libraries (make bench, scripts/clientbench: 50 goroutines
// on 50 keep-alive connections to nginx, median of five rounds) net/http
// costs 2.2× the raw client's CPU per request, github.com/valyala/fasthttp
// v1.78.0 0.95× (rounds overlapping: raw 16-21 µs, fasthttp 17-19 µs on a
// shared machine). By the rule of issue #28 (keep a hand-written client
// only where the library is more than 10% worse) rawhttp.go is due to be
// replaced by fasthttp, with its retries of idempotent requests turned
// off so no request is sent twice; that switch is left to its own change.
package httptarget
