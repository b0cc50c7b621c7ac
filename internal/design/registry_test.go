package design

import (
	"slices"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/rate"
)

// TestEveryDesignIsComplete fails when a registered design lacks a part
// another package reads: a summary, a state, a clock, a key schema (or
// keys on a design that keeps its state in memory), a theory, an
// envelope, a counter reader, or a counter reader its keys cannot serve.
// The limiter's constructor is checked in package limiter
// (TestEveryDesignHasAConstructor).
func TestEveryDesignIsComplete(t *testing.T) {
	t.Parallel()
	p := Params{Limit: rate.Limit{Count: 10, Window: time.Second}, Gateways: 3}
	tags := map[string]string{}
	for _, d := range All() {
		t.Run(d.Name, func(t *testing.T) {
			if d.Summary == "" {
				t.Error("no summary for rlctl help scenarios")
			}
			if d.State == 0 {
				t.Error("no state")
			}
			if d.Clock.Of("") == "" {
				t.Error("no clock decides its window: neither a fixed clock nor a default")
			}
			if d.Theory == nil || d.Envelope == nil {
				t.Fatal("no theory or no envelope")
			}
			if th := d.Theory(p); th.Why == "" || th.Worst == "" || th.Atomic == "" || th.Clock == "" || th.Ceiling < 10 {
				t.Errorf("theory leaves a question unanswered or a ceiling below L: %+v", th)
			}
			if e := d.Envelope(p); e < 10 {
				t.Errorf("envelope %g below the published count", e)
			}
			if d.Counter == 0 {
				t.Error("no counter reader (NoCounter when its state is not a count)")
			}
			k := d.Keys
			if d.State == StateLocal {
				if !k.None() || d.Counter != NoCounter {
					t.Errorf("keeps its state in memory but has keys %+v or a counter reader %v", k, d.Counter)
				}
				return
			}
			if k.None() || k.Value == 0 || k.Value.Type() == "" || k.Layout == "" || (k.TTL.Windows <= 0) == !k.TTL.UntilFull {
				t.Errorf("key schema incomplete (a tag, a value, a layout and one TTL rule): %+v", k)
			}
			if other, dup := tags[k.Tag]; dup {
				t.Errorf("key tag %q is also %s's", k.Tag, other)
			}
			tags[k.Tag] = d.Name
			want := map[Counter][]Value{StringCounter: {ValueCounter}, LogCounter: {ValueLog}, NoCounter: {ValueBudget, ValueBucket, ValueTAT}}
			if !slices.Contains(want[d.Counter], k.Value) {
				t.Errorf("counter reader %v cannot read keys holding value %v", d.Counter, k.Value)
			}
		})
	}
}

func TestLookupFindsEveryNameInOrder(t *testing.T) {
	t.Parallel()
	names := Names()
	if len(names) != len(All()) || len(names) == 0 {
		t.Fatalf("Names %v, All has %d", names, len(All()))
	}
	for i, n := range names {
		d, ok := Lookup(n)
		if !ok || d != All()[i] {
			t.Errorf("Lookup(%q) = %v, %v; want the %dth design", n, d, ok, i)
		}
		if slices.Index(names, n) != i {
			t.Errorf("%q registered twice", n)
		}
	}
	if _, ok := Lookup("no-such-design"); ok {
		t.Error("an unknown name was found")
	}
}

func TestClockOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		design, chosen, want string
	}{
		{LocalFixedWindow, ClockRedis, ClockGateway}, // memory: its own clock
		{RedisFixedWindow, ClockGateway, ClockRedis}, // a key's expiry
		{RedisTokenBucket, "", ClockGateway},         // the default
		{RedisTokenBucket, ClockRedis, ClockRedis},   // chosen
		{RedisGCRA, "", ClockRedis},                  // redis_rate's default
		{Leasing, ClockGateway, ClockGateway},        // chosen
	}
	for _, tt := range tests {
		if got := MustLookup(tt.design).Clock.Of(tt.chosen); got != tt.want {
			t.Errorf("%s with clock %q: %q, want %q", tt.design, tt.chosen, got, tt.want)
		}
	}
}

func TestKeysOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		design  string
		pattern string
		keys    []string
	}{
		{RedisFixedWindow, "rl:fw:{*}", []string{"rl:fw:{kim}"}},
		{RedisClockWindow, "rl:cw:{*}:*", []string{"rl:cw:{kim}:7"}},
		{RedisSlidingWindow, "rl:sw:{*}:*", []string{"rl:sw:{kim}:7", "rl:sw:{kim}:6"}},
		{LocalTokenBucket, "", nil},
	}
	for _, tt := range tests {
		k := MustLookup(tt.design).Keys
		if got := k.Pattern("rl:"); got != tt.pattern {
			t.Errorf("%s pattern %q, want %q", tt.design, got, tt.pattern)
		}
		if got := k.Of("rl:", "kim", 7); !slices.Equal(got, tt.keys) {
			t.Errorf("%s keys %v, want %v", tt.design, got, tt.keys)
		}
	}
}
