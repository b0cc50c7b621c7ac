package scenario

import (
	"net/url"
	"strings"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/redact"
)

// validateDeployment checks what an http target says of its deployment's
// own Redis: a redis:// URL (rlctl starts nothing for it), the layout its
// counters are kept in, and the Toxiproxy in front of it.
func validateDeployment(t *Target, set func(string) bool, bad func(string, string, ...any), checks Checks) {
	if t.Kind != KindHTTP {
		return
	}
	if set("target.redis") && !strings.Contains(t.Redis, "://") {
		bad("target.redis", "an http target's Redis is the deployment's own: give its redis://, rediss://, redis+sentinel:// or redis+cluster:// URL, not %q", redact.URL(t.Redis))
	}
	if t.Schema != "" && t.Pattern != "" {
		bad("target.pattern", "give schema or pattern, not both")
	}
	if (t.Schema != "" || t.Pattern != "") && t.Redis == "" {
		bad("target.schema", "a counter layout is read in the deployment's Redis: give target.redis too")
	}
	if t.Pattern != "" && !strings.Contains(t.Pattern, idPlaceholder) {
		bad("target.pattern", "want a key pattern with {id} where the identity goes, like \"ratelimit:{id}\"")
	}
	if t.Schema != "" && checks.Schema != nil {
		if err := checks.Schema(t.Schema); err != nil {
			bad("target.schema", "%v", err)
		}
	}
	if tp := t.Toxiproxy; tp.Set() {
		if tp.API == "" || tp.Proxy == "" {
			bad("target.toxiproxy", "needs api (like http://127.0.0.1:8474) and proxy (the name of the proxy in front of the gateways' Redis)")
		} else if u, err := url.Parse(tp.API); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("target.toxiproxy", "api: want an http:// URL of the Toxiproxy API, got %q", redact.URL(tp.API))
		}
	}
}

// validateDeploymentFault checks one fault of an http target: each acts on
// what the target names (its Redis, its layout, its Toxiproxy), and never
// on a server in a way rlctl could not undo.
func validateDeploymentFault(t *Target, f Fault, p string, set func(string) bool, bad func(string, string, ...any)) {
	needRedis := func(what string) {
		if t.Redis == "" {
			bad(p+".action", "%s acts on the deployment's own Redis: name it in target.redis", what)
		}
	}
	switch f.Action {
	case design.FaultFailover:
		needRedis("failover")
		if t.Redis != "" && !strings.Contains(t.Redis, "+sentinel://") && !strings.Contains(t.Redis, "+cluster://") {
			bad(p+".action", "failover needs a Sentinel or Cluster deployment (target.redis redis+sentinel:// or redis+cluster://): a standalone Redis has no replica to promote")
		}
	case design.FaultRedisStall:
		needRedis("redis-stall")
	case design.FaultRedisReset:
		needRedis("redis-reset")
		if t.Schema == "" && t.Pattern == "" {
			bad(p+".action", "redis-reset deletes the run identities' counters: name their layout in target.schema or target.pattern")
		}
	case design.FaultRedisDown, design.FaultRedisLatency:
		if !t.Toxiproxy.Set() {
			bad(p+".action", "%s on real gateways goes through the Toxiproxy in front of their Redis: name it in target.toxiproxy", f.Action)
		}
	case design.FaultKillPrimary:
		bad(p+".action", "kill-primary kills a server, and rlctl never kills one it did not start: use failover")
	case design.FaultGatewayDown:
		bad(p+".action", "gateway-down stops a simulated gateway; rlctl does not stop real ones")
	}
	if set(p + ".replica_lag") {
		bad(p+".replica_lag", "cuts a replica off, and rlctl never reconfigures a server it did not start")
	}
}
