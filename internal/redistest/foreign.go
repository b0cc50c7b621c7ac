package redistest

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// foreignTTL is the TTL of the seeded keys that have one: long enough to
// outlive a whole verify suite, so none expires during a test.
const foreignTTL = 6 * time.Hour

// ttlSlack absorbs the difference between the test's clock and Redis's
// when a TTL's natural countdown is compared with the time that passed.
const ttlSlack = 50 * time.Millisecond

// foreignKey is one key of another application: how to write it, and
// whether it gets a TTL.
type foreignKey struct {
	name  string
	ttl   bool
	write func(ctx context.Context, c redis.UniversalClient, key string) error
}

func seedStr(v string) func(context.Context, redis.UniversalClient, string) error {
	return func(ctx context.Context, c redis.UniversalClient, key string) error {
		return c.Set(ctx, key, v, 0).Err()
	}
}

func seedHash(fv ...string) func(context.Context, redis.UniversalClient, string) error {
	return func(ctx context.Context, c redis.UniversalClient, key string) error {
		return c.HSet(ctx, key, anys(fv)...).Err()
	}
}

func seedList(vs ...string) func(context.Context, redis.UniversalClient, string) error {
	return func(ctx context.Context, c redis.UniversalClient, key string) error {
		return c.RPush(ctx, key, anys(vs)...).Err()
	}
}

func seedSet(vs ...string) func(context.Context, redis.UniversalClient, string) error {
	return func(ctx context.Context, c redis.UniversalClient, key string) error {
		return c.SAdd(ctx, key, anys(vs)...).Err()
	}
}

func anys(vs []string) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

func seedZSet(scores ...float64) func(context.Context, redis.UniversalClient, string) error {
	return func(ctx context.Context, c redis.UniversalClient, key string) error {
		zs := make([]redis.Z, len(scores))
		for i, s := range scores {
			zs[i] = redis.Z{Score: s, Member: "m" + itoa(i)}
		}
		return c.ZAdd(ctx, key, zs...).Err()
	}
}

func seedStream(ctx context.Context, c redis.UniversalClient, key string) error {
	return c.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: "1-1", Values: []any{"event", "login", "user", "7"}}).Err()
}

// foreignKeys is what SeedForeign writes. Under rl: (the prefix rlctl
// shares with rate-limit-redis) it has keys whose names a limiter layout
// claims but whose type or value do not fit one ("plain" where a counter
// goes, a hash without a bucket's fields, a list where a sliding log's
// sorted set goes); under app: every Redis type, an integer counter
// included; and a job queue's layout no limiter uses.
var foreignKeys = []foreignKey{
	{"rl:config:flags", false, seedHash("beta", "on", "dark_mode", "off")},
	{"rl:fw:notlimiter", false, seedStr("plain")},
	{"rl:sessions:abc", false, seedStr("u=42;exp=never")},
	{"rl:sessions:def", true, seedStr("u=7")},
	{"rl:fw:{intruder}", false, seedStr("plain")},
	{"rl:tb:{intruder}", false, seedHash("owner", "ops", "note", "not a bucket")},
	{"rl:sl:{intruder}", false, seedList("1700000000000", "1700000000001")},
	{"rl:gcra:{intruder}", true, seedStr("soon")},
	{"rl:queue", false, seedList("job1", "job2")},
	{"rl:members", true, seedSet("alice", "bob")},
	{"app:session:1", true, seedStr("token-1")},
	{"app:session:2", false, seedStr("token-2")},
	{"app:jobs", false, seedList("a", "b", "c")},
	{"app:online", false, seedSet("u1", "u2")},
	{"app:scores", true, seedZSet(1, 2.5, 1700000000000)},
	{"app:user:7", false, seedHash("name", "Ada", "plan", "pro")},
	{"app:events", false, seedStream},
	{"app:visits", false, seedStr("42")},
	{"sidekiq:queue:default", false, seedList(`{"class":"Mailer"}`)},
	{"sidekiq:stat:processed", false, seedStr("1024")},
	{"sidekiq:processes", true, seedSet("host:1")},
	{"cache key with spaces", false, seedStr("x")},
	{"bin:\x00\xff", true, seedStr("\x00\x01")},
}

// SeedForeign writes another application's keys into the Redis behind c —
// data rlctl must never change — and returns their snapshot, taken right
// after seeding. The keys sit under rl: (named like rlctl's and
// rate-limit-redis's keys, but holding what no limiter writes), under app:
// (strings, a list, a set, a sorted set, a hash, a stream, an integer
// counter) and under an unrelated job-queue layout (sidekiq:); some have a
// TTL (hours long) and some none. It fails t if any of them exists already,
// so it never overwrites data. Works on a standalone, Sentinel or Cluster
// client.
func SeedForeign(t testing.TB, c redis.UniversalClient) *Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	names := make([]string, 0, len(foreignKeys))
	for _, k := range foreignKeys {
		n, err := c.Exists(ctx, k.name).Result()
		if err != nil {
			t.Fatalf("seed foreign keys: %v", err)
		}
		if n != 0 {
			t.Fatalf("seed foreign keys: %q exists already", k.name)
		}
		if err := k.write(ctx, c, k.name); err != nil {
			t.Fatalf("seed foreign key %q: %v", k.name, err)
		}
		if k.ttl {
			if err := c.Expire(ctx, k.name, foreignTTL).Err(); err != nil {
				t.Fatalf("seed foreign key %q: %v", k.name, err)
			}
		}
		names = append(names, k.name)
	}
	return TakeSnapshot(t, c, names...)
}

// keyState is one key as TakeSnapshot saw it.
type keyState struct {
	dump string // DUMP: the value, type and encoding, byte for byte
	pttl time.Duration
	// from and to bracket the moment PTTL was read.
	from, to time.Time
}

// Snapshot is the state of some keys at one moment: each one's DUMP bytes
// and PTTL. AssertUnchanged compares the keys' state now with it.
type Snapshot struct {
	keys  []string
	state map[string]keyState
}

// TakeSnapshot records the DUMP bytes and PTTL of each of keys (which must
// exist), failing t otherwise.
func TakeSnapshot(t testing.TB, c redis.UniversalClient, keys ...string) *Snapshot {
	t.Helper()
	s := &Snapshot{keys: append([]string(nil), keys...), state: map[string]keyState{}}
	for _, k := range keys {
		st, err := readState(c, k)
		if err != nil {
			t.Fatalf("snapshot %q: %v", k, err)
		}
		s.state[k] = st
	}
	return s
}

// Keys lists the keys the snapshot holds, sorted.
func (s *Snapshot) Keys() []string {
	out := append([]string(nil), s.keys...)
	sort.Strings(out)
	return out
}

// AssertUnchanged fails t (without stopping it) for every key of the
// snapshot that is gone, holds other bytes, or whose TTL changed other
// than by counting down: a key without a TTL must still have none, and a
// key with one must have what is left of it after the time that passed
// (within a few milliseconds), so a TTL that was set again, even to the
// same value, shows.
func (s *Snapshot) AssertUnchanged(t testing.TB, c redis.UniversalClient) {
	t.Helper()
	for _, k := range s.keys {
		before := s.state[k]
		now, err := readState(c, k)
		if err != nil {
			t.Errorf("key %q: %v", k, err)
			continue
		}
		if now.dump != before.dump {
			t.Errorf("key %q: value changed", k)
		}
		switch {
		case before.pttl < 0 && now.pttl >= 0:
			t.Errorf("key %q: had no TTL, now has %v", k, now.pttl)
		case before.pttl >= 0 && now.pttl < 0:
			t.Errorf("key %q: had a TTL of %v, now has none", k, before.pttl)
		case before.pttl >= 0:
			// The countdown since the snapshot lies between the shortest
			// and the longest time that can have passed between the reads.
			hi := before.pttl - now.from.Sub(before.to) + ttlSlack
			lo := before.pttl - now.to.Sub(before.from) - ttlSlack
			if now.pttl > hi || now.pttl < lo {
				t.Errorf("key %q: TTL %v, want %v to %v after counting down from %v", k, now.pttl, lo, hi, before.pttl)
			}
		}
	}
}

var errGone = errors.New("key does not exist")

func readState(c redis.UniversalClient, key string) (keyState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := c.Dump(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return keyState{}, errGone
	}
	if err != nil {
		return keyState{}, err
	}
	st := keyState{dump: d, from: time.Now()}
	p, err := c.PTTL(ctx, key).Result()
	st.to = time.Now()
	if err != nil {
		return keyState{}, err
	}
	if p == -2 {
		return keyState{}, errGone
	}
	st.pttl = p // -1 (no TTL) stays negative
	return st, nil
}
