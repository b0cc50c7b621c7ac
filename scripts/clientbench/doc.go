// Package clientbench puts rlctl's clients beside the well-kept libraries
// on the same work, for make bench: the decision path of internal/hotpath
// (github.com/redis/rueidis without auto-pipelining, as rlctl runs it)
// against bare rueidis with and without its auto-pipelining and go-redis,
// one decision's EVALSHA from 50 goroutines against a real redis-server;
// the http target of internal/target/httptarget (on
// github.com/valyala/fasthttp) against bare fasthttp doing the same work,
// which is what the target adds, and net/http, 50 goroutines against the
// server CLIENTBENCH_URL names (make bench's nginx). Each benchmark
// reports requests per second and the process's CPU µs per request, the
// figure that limits what rlctl can prove on a small machine.
//
// It is a module of its own so that its benchmarks, which need servers
// make bench starts, stay out of make test.
package clientbench
