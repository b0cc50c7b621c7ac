// Package rawsock reads and writes a TCP connection's socket with raw
// system calls, for the clients on rlctl's request path (the Redis hot
// path, the http target); ReadFD is its read for any non-blocking
// descriptor (make bench's paced floor reads its timerfd with it).
//
// net.Conn makes each read and write through syscall.Syscall, which tells
// the scheduler the call may block and, when the process was idle, wakes
// the runtime's monitor thread (sysmon) from its sleep. A paced run idles
// between requests, so that wake came with nearly every request. The
// socket is non-blocking, so its calls never block: made raw, they skip
// that bookkeeping, and a call that finds nothing to read or no room to
// write waits through the netpoller as net.Conn's does, deadlines
// included. WriteThenRead writes a request and waits for its answer
// without first trying a read that, right after the request, finds
// nothing: a system call per request fewer.
//
// It is hand-written where a library would do by the rule of issue #28
// (keep one only where the library is more than 10% worse on the figure
// that matters): in make bench's client comparison, bare rueidis without
// auto-pipelining cost 1.26× and 1.24× the CPU per decision of the hot
// path on rawsock (one client shared, one per gateway), and bare fasthttp
// 1.17× the http target's per request (2026-12-06, requests written by
// their answer's read).
package rawsock
