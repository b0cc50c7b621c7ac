package redisconn

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// IsOwn is isOwn for the external tests: whether the server c
// reaches on addr is process pid.
func IsOwn(ctx context.Context, c redis.UniversalClient, addr string, pid int) error {
	return isOwn(ctx, c, &Process{Addr: addr, Pid: pid})
}

// SetFreePort makes the spawn pick its ports with pick(next), where next
// is the usual free-port finder, until the returned restore is called.
// Tests that call it must not run in parallel with any other spawn.
func SetFreePort(pick func(next func() (int, error)) (int, error)) (restore func()) {
	next := freePort
	freePort = func() (int, error) { return pick(next) }
	return func() { freePort = next }
}
