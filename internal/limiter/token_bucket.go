package limiter

import (
	_ "embed"
	"strconv"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/hotpath"
)

// redis-token-bucket's script refills and spends one shared bucket; its
// ARGV are capacity, rate_per_ms, cost, now_us.
//
//go:embed lua/token_bucket.lua
var tokenBucketLua string

func init() {
	registerLua(design.RedisTokenBucket, luaDesign{script: newScript(design.RedisTokenBucket, tokenBucketLua), fixed: func(cfg Config, a *hotpath.Args) {
		a.Int(capacityOf(cfg))
		a.String(strconv.FormatFloat(float64(cfg.Limit.Count)/float64(cfg.Limit.Window.Milliseconds()), 'g', -1, 64))
	}})
}
