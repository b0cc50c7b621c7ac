package redisconn

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// go-redis logs retries and Sentinel lookups straight to os.Stderr by
// default. A core package must not write to the process's streams, and
// those lines would break rlctl's one-line errors (and could carry a URL),
// so they are discarded: what failed reaches the user as the error of the
// call that failed.
func init() { redis.SetLogger(discard{}) }

type discard struct{}

func (discard) Printf(context.Context, string, ...any) {}
