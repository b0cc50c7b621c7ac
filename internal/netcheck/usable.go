package netcheck

import (
	"net"
	"time"
)

// IdleCheck is how long a pooled connection may sit idle before it is
// checked with Alive when taken: busy connections skip the check (a
// syscall on every request), and a server's idle timeout is far longer.
const IdleCheck = time.Second

// Usable reports whether a pooled connection idle since idleSince can be
// used for the next request.
func Usable(nc net.Conn, idleSince time.Time) bool {
	return time.Since(idleSince) < IdleCheck || Alive(nc)
}
