// Package httptarget is the target of real HTTP gateways: requests with the
// identity in a header, the query, the path or the source address, answers
// read as allowed, denied or errors with the rate-limit header fields they
// carried (ParseHints). Plain http:// goes through
// github.com/valyala/fasthttp (fastclient.go), with its retries off so no
// request is sent twice, connections opened ahead taken first and a
// cancelled run cutting its requests short; https:// through net/http, with
// connections handshaken ahead (warmdial.go), so no dial lands inside a
// measured request.
//
// fasthttp replaced a hand-written HTTP/1.1 client by the rule of issue
// #28, a library within 10% of the hand-written client's CPU per request:
// the target on fasthttp cost a median 1.04× the hand-written one over 24
// alternating rounds (1.10× over 16 in another run) of 150,000 requests
// from 50 goroutines on 50 keep-alive connections to nginx on loopback,
// with the same system calls per request. net/http costs about 3× (make
// bench, scripts/clientbench).
package httptarget
