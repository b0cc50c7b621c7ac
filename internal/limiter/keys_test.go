package limiter

import (
	"context"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/rate"
)

// TestKeysMatchWhatScriptsWrite: after one request of each Redis design on
// a real server, the keys that exist are exactly among Keys() (the one
// holding this window's state first), every one matches KeyPattern, has a
// TTL, and has the documented type. This is the layout `keys inspect` and
// `audit` rely on.
func TestKeysMatchWhatScriptsWrite(t *testing.T) {
	t.Parallel()
	b := realBackend(t)
	types := map[string]string{
		RedisGetIncr: "string", RedisFixedWindow: "string", RedisFixedWindowRefresh: "string",
		RedisClockWindow: "string", RedisTokenBucket: "hash", RedisSlidingWindow: "string",
		RedisSlidingLog: "zset", RedisGCRA: "string", Leasing: "string",
	}
	ctx := context.Background()
	now := epoch.Add(1234 * time.Millisecond)
	for algo, typ := range types {
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
	if KeyPattern(Config{Algorithm: LocalFixedWindow}) != "" || Keys(Config{Algorithm: LocalTokenBucket}, "x", now) != nil {
		t.Error("local designs must have no keys")
	}
	if got := KeyPattern(Config{Algorithm: RedisClockWindow, Prefix: "app:"}); got != "app:cw:{*}:*" {
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
		{RedisGetIncr, []string{"rl:gi:{u}"}},
		{RedisFixedWindow, []string{"rl:fw:{u}"}},
		{RedisFixedWindowRefresh, []string{"rl:fwr:{u}"}},
		{RedisClockWindow, []string{"rl:cw:{u}:10"}},
		{RedisTokenBucket, []string{"rl:tb:{u}"}},
		{RedisSlidingWindow, []string{"rl:sw:{u}:10", "rl:sw:{u}:9"}},
		{RedisSlidingLog, []string{"rl:sl:{u}"}},
		{RedisGCRA, []string{"rl:gcra:{u}"}},
		{Leasing, []string{"rl:lease:{u}:10"}},
	}
	for _, tt := range tests {
		t.Run(tt.algo, func(t *testing.T) {
			if got := Keys(Config{Algorithm: tt.algo, Limit: l}, "u", now); !slices.Equal(got, tt.want) {
				t.Fatalf("Keys = %v, want %v", got, tt.want)
			}
		})
	}
}

// IdentityOfKey reads back the identity of every key Keys gives, for every
// algorithm that writes keys and identities that hold the layout's own
// separators; and refuses keys of another prefix, design or window.
func TestIdentityOfKeyInvertsKeys(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_700_000_123_456)
	for algo := range tags {
		for _, prefix := range []string{"", "app:rl:"} {
			cfg := Config{Algorithm: algo, Prefix: prefix, Limit: rate.Limit{Count: 5, Window: time.Second}}
			for _, id := range []string{"u1", "", "a:b", "x}y", "{z}", "203.0.113.7:443", "user:12:34"} {
				for _, k := range Keys(cfg, id, now) {
					if got, ok := IdentityOfKey(cfg, k); !ok || got != id {
						t.Errorf("%s, prefix %q: key %q gives %q (%v), want %q", algo, prefix, k, got, ok, id)
					}
				}
			}
			other := Config{Algorithm: algo, Prefix: "other:", Limit: cfg.Limit}
			for _, k := range Keys(other, "u1", now) {
				if prefix != "other:" {
					if got, ok := IdentityOfKey(cfg, k); ok {
						t.Errorf("%s, prefix %q: another prefix's key %q gives %q", algo, prefix, k, got)
					}
				}
			}
		}
	}
	cfg := Config{Algorithm: RedisClockWindow, Limit: rate.Limit{Count: 5, Window: time.Second}}
	for _, k := range []string{"rl:cw:{u1}", "rl:cw:{u1}:x", "rl:fw:{u1}", "rl:cw:u1:5"} {
		if got, ok := IdentityOfKey(cfg, k); ok {
			t.Errorf("%q is not a clock-window key, yet gives %q", k, got)
		}
	}
	if _, ok := IdentityOfKey(Config{Algorithm: LocalFixedWindow}, "rl:fw:{u1}"); ok {
		t.Error("a local design writes no key, yet one gives an identity")
	}
}
