package limiter

import (
	_ "embed"

	"github.com/rlctl/rlctl/internal/design"
)

// redis-fixed-window-refresh's script is the fixed window with the TTL
// bug; its ARGV are limit, window_ms, cost.
//
//go:embed lua/fixed_window_refresh.lua
var fixedWindowRefreshLua string

func init() {
	registerLua(design.RedisFixedWindowRefresh, luaDesign{script: newScript(design.RedisFixedWindowRefresh, fixedWindowRefreshLua), fixed: limitAndWindow})
}
