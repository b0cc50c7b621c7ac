// Package httptarget is the target of real HTTP gateways: requests with the
// identity in a header, the query, the path or the source address, answers
// read as allowed, denied or errors with the rate-limit header fields they
// carried (ParseHints). Plain http:// goes through a keep-alive HTTP/1.1
// client of its own (rawhttp.go); https:// through net/http, with
// connections handshaken ahead (warmdial.go), so no dial lands inside a
// measured request.
//
// Against the libraries (make bench, scripts/clientbench: 50 goroutines
// on 50 keep-alive connections to nginx, median of five rounds; two runs
// on a machine shared with other work) net/http costs 2.2× and 3.1× the
// raw client's CPU per request, github.com/valyala/fasthttp v1.78.0 0.95×
// in one run and 1.43× in the other. The raw client stays until a quiet
// machine settles it: by the rule of issue #28 it goes only if fasthttp
// is within 10%, and then with fasthttp's retries of idempotent requests
// turned off, so that no request is sent twice.
package httptarget
