// Package httptarget is the target of real HTTP gateways: requests with the
// identity in a header, the query, the path or the source address, answers
// read as allowed, denied or errors with the rate-limit header fields they
// carried (ParseHints). Plain http:// goes through a keep-alive HTTP/1.1
// client of its own (rawhttp.go); https:// through net/http, with
// connections handshaken ahead (warmdial.go), so no dial lands inside a
// measured request.
//
// The own client stays because the libraries cost more of the CPU the
// gateway under test shares: measured by make bench (scripts/clientbench,
// 50 goroutines on 50 keep-alive connections to nginx), 15.0 CPU µs per
// request against fasthttp v1.78.0's 19.6 (31% more) and net/http's 44.5.
package httptarget
