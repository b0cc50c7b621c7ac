// Package rawsock reads and writes a TCP connection's socket with raw
// system calls, for the clients on rlctl's request path (the Redis hot
// path, the http target).
//
// net.Conn makes each read and write through syscall.Syscall, which tells
// the scheduler the call may block and, when the process was idle, wakes
// the runtime's monitor thread (sysmon) from its sleep. A paced run idles
// between requests, so that wake came with nearly every request. The
// socket is non-blocking, so its calls never block: made raw, they skip
// that bookkeeping, and a call that finds nothing to read or no room to
// write waits through the netpoller as net.Conn's does, deadlines
// included.
package rawsock
