package limiter

import (
	"context"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/rate"
)

// TestKeysMatchWhatScriptsWrite: after one request of each Redis design on
// a real server, the keys that exist are exactly among Keys() (the one
// holding this window's state first), every one matches KeyPattern, has a
// TTL, and has the type its design's key schema says. This is the layout
// `keys inspect`, `audit` and counts_lost rely on.
func TestKeysMatchWhatScriptsWrite(t *testing.T) {
	t.Parallel()
	b := realBackend(t)
	ctx := context.Background()
	now := epoch.Add(1234 * time.Millisecond)
	for _, d := range design.All() {
		if d.State == design.StateLocal {
			continue
		}
		algo, typ := d.Name, d.Keys.Value.Type()
		t.Run(algo, func(t *testing.T) {
			cfg := Config{Algorithm: algo, Limit: rate.Limit{Count: 10, Window: time.Hour}, Clock: ClockGateway}
			clock := newFakeClock(now)
			l := mustNew(t, cfg, b.client, clock.Clock())
			id := "user:42/" + algo
			if _, err := l.Allow(ctx, id, 1); err != nil {
				t.Fatal(err)
			}
			want := Keys(cfg, id, now)
			pattern := KeyPattern(cfg)
			var found []string
			iter := b.client.Scan(ctx, 0, pattern, 100).Iterator()
			for iter.Next(ctx) {
				found = append(found, iter.Val())
			}
			if err := iter.Err(); err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(found, want[0]) {
				t.Fatalf("SCAN %s found %v, want it to hold %s", pattern, found, want[0])
			}
			for _, k := range found {
				if !slices.Contains(want, k) {
					t.Errorf("key %s exists but Keys() = %v", k, want)
				}
				if ok, _ := path.Match(pattern, k); !ok && !hasSlash(k) {
					t.Errorf("key %s does not match %s", k, pattern)
				}
				if ttl := b.client.PTTL(ctx, k).Val(); ttl <= 0 {
					t.Errorf("key %s has TTL %v, want one", k, ttl)
				}
				if got := b.client.Type(ctx, k).Val(); got != typ {
					t.Errorf("key %s is a %s, want %s", k, got, typ)
				}
			}
		})
	}
	if KeyPattern(Config{Algorithm: design.LocalFixedWindow}) != "" || Keys(Config{Algorithm: design.LocalTokenBucket}, "x", now) != nil {
		t.Error("local designs must have no keys")
	}
	if got := KeyPattern(Config{Algorithm: design.RedisClockWindow, Prefix: "app:"}); got != "app:cw:{*}:*" {
		t.Errorf("KeyPattern with prefix = %q", got)
	}
}

// path.Match stops * at '/', Redis' glob does not; ids with a slash are
// checked by SCAN alone.
func hasSlash(s string) bool { return slices.Contains([]byte(s), '/') }

func TestKeysLayout(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(10_500) // window index 10 of 1s windows
	l := rate.Limit{Count: 1, Window: time.Second}
	tests := []struct {
		algo string
		want []string
	}{
		{design.RedisGetIncr, []string{"rl:gi:{u}"}},
		{design.RedisFixedWindow, []string{"rl:fw:{u}"}},
		{design.RedisFixedWindowRefresh, []string{"rl:fwr:{u}"}},
		{design.RedisClockWindow, []string{"rl:cw:{u}:10"}},
		{design.RedisTokenBucket, []string{"rl:tb:{u}"}},
		{design.RedisSlidingWindow, []string{"rl:sw:{u}:10", "rl:sw:{u}:9"}},
		{design.RedisSlidingLog, []string{"rl:sl:{u}"}},
		{design.RedisGCRA, []string{"rl:gcra:{u}"}},
		{design.Leasing, []string{"rl:lease:{u}:10"}},
	}
	for _, tt := range tests {
		t.Run(tt.algo, func(t *testing.T) {
			if got := Keys(Config{Algorithm: tt.algo, Limit: l}, "u", now); !slices.Equal(got, tt.want) {
				t.Fatalf("Keys = %v, want %v", got, tt.want)
			}
		})
	}
}
