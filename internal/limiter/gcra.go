package limiter

import (
	_ "embed"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/hotpath"
)

// redis-gcra's script meters the theoretical arrival time; its ARGV are
// burst, limit, window_ms, cost, now_us.
//
//go:embed lua/gcra.lua
var gcraLua string

func init() {
	registerLua(design.RedisGCRA, luaDesign{script: newScript(design.RedisGCRA, gcraLua), fixed: func(cfg Config, a *hotpath.Args) {
		a.Int(capacityOf(cfg))
		limitAndWindow(cfg, a)
	}})
}
