package redisconn

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// oomProbe is a script that writes nothing but, lacking the no-writes
// flag, is one Redis 7 refuses with OOM while it is over maxmemory and its
// policy cannot evict (noeviction): a write test that writes nothing.
// Older servers cannot compile the shebang, which tells nothing.
const oomProbe = "#!lua\nreturn 1"

// ErrOutOfMemory is what OutOfMemory's error wraps.
var ErrOutOfMemory = errors.New("out of memory (OOM): used memory is above maxmemory and the policy evicts nothing, so Redis refuses every write")

// OutOfMemory returns an error wrapping ErrOutOfMemory when the Redis
// behind c refuses writes for lack of memory, and nil when it takes them
// or cannot tell (an older server, a user not allowed EVAL). Nothing is
// written either way. An error that is no reply from Redis is returned as
// it is.
func OutOfMemory(ctx context.Context, c redis.Scripter) error {
	err := c.Eval(ctx, oomProbe, nil).Err()
	var re redis.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &re) && IsOOM(err):
		return fmt.Errorf("%w (%v)", ErrOutOfMemory, err)
	case errors.As(err, &re):
		return nil
	}
	return err
}

// IsOOM reports whether err is Redis refusing a command for lack of
// memory.
func IsOOM(err error) bool {
	return err != nil && strings.Contains(err.Error(), "OOM command not allowed")
}
