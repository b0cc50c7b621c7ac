package scripttarget

import (
	"context"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/internal/scenario"
)

// TestAllowedRuleOnRealReplies runs small Lua limiters in a real
// redis-server and checks the scenario's allowed rules (ParseRule) against the reply shapes
// go-redis really hands back: integers, status strings, tables, and the
// nil a Lua false becomes.
func TestAllowedRuleOnRealReplies(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	scs, err := scenario.Load([]string{"../../scenario/testdata/script.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	rule, err := ParseRule(ConfigOf(scs[0].Target).Allowed)
	if err != nil {
		t.Fatal(err)
	}
	// The scenario's own script, limit 3: three allowed, then denied.
	for i := range 5 {
		reply, err := rdb.Eval(ctx, ConfigOf(scs[0].Target).Source, []string{"rl:user-1"}, 3, 10).Result()
		if err != nil {
			t.Fatalf("eval: %v", err)
		}
		if got, err := rule.Match(reply); err != nil || got != (i < 3) {
			t.Errorf("request %d: reply %#v matched %v (%v), want %v", i, reply, got, err, i < 3)
		}
	}

	tests := []struct {
		name, rule, script string
		want               bool
	}{
		{"table first element", "== 1", "return {1, 42}", true},
		{"table denied", "== 1", "return {0, 42}", false},
		{"status reply", "== 'OK'", "return redis.status_reply('OK')", true},
		{"string reply", "== 'allowed'", "return 'allowed'", true},
		{"lua false is nil", "== 1", "return false", false},
		{"lua true is 1", "== 1", "return true", true},
		{"remaining above zero", "> 0", "return 7", true},
		{"negative means denied", ">= 0", "return -1", false},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.rule)
		if err != nil {
			t.Fatal(err)
		}
		reply, err := rdb.Eval(ctx, tt.script, nil).Result()
		if err != nil && err.Error() != "redis: nil" {
			t.Fatalf("%s: eval: %v", tt.name, err)
		}
		if got, err := r.Match(reply); err != nil || got != tt.want {
			t.Errorf("%s: %s on %#v = %v (%v), want %v", tt.name, tt.rule, reply, got, err, tt.want)
		}
	}
}
