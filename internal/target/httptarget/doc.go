// Package httptarget is the target of real HTTP gateways: requests with the
// identity in a header, the query, the path or the source address, answers
// read as allowed, denied or errors with the rate-limit header fields they
// carried (ParseHints). Plain http:// goes through a keep-alive HTTP/1.1
// client of its own (rawhttp.go), lighter than net/http under load; https://
// through net/http, with connections handshaken ahead (warmdial.go), so no
// dial lands inside a measured request.
package httptarget
