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
