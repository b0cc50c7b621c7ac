package ceiling

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/redistest"
)

func TestTheoryKnownCeilings(t *testing.T) {
	t.Parallel()
	p := Params{Limit: rate.Limit{Count: 100, Window: time.Minute}, Gateways: 50, Lease: 20}
	tests := []struct {
		design  string
		aligned float64
		ceiling float64
	}{
		{design.LocalFixedWindow, 5000, 10000},
		{design.RedisFixedWindow, 100, 200},
		{design.RedisFixedWindowRefresh, 100, 100},
		{design.RedisSlidingLog, 100, 100},
		{design.RedisTokenBucket, 199, 199},
		{design.Leasing, 100 + 20*50, 200 + 20*50},
		{design.RedisGetIncr, 149, 298},
	}
	for _, tt := range tests {
		t.Run(tt.design, func(t *testing.T) {
			got, err := Of(tt.design, p)
			if err != nil {
				t.Fatal(err)
			}
			if got.Aligned != tt.aligned || got.Ceiling != tt.ceiling {
				t.Errorf("aligned %g ceiling %g; want %g, %g", got.Aligned, got.Ceiling, tt.aligned, tt.ceiling)
			}
			if got.Ratio != got.Ceiling/100 {
				t.Errorf("ratio %g, want ceiling/L", got.Ratio)
			}
		})
	}
}

func TestEveryDesignHasAnswers(t *testing.T) {
	t.Parallel()
	for _, th := range All(Params{Limit: rate.Limit{Count: 10, Window: time.Second}, Gateways: 3, OnError: "closed"}) {
		if th.Why == "" || th.Atomic == "" || th.Clock == "" || th.OnError == "" {
			t.Errorf("%s: a reviewer's question is unanswered: %+v", th.Design, th)
		}
		if th.Ceiling < th.Aligned {
			t.Errorf("%s: ceiling %g below aligned-window figure %g", th.Design, th.Ceiling, th.Aligned)
		}
		if th.Ceiling < 10 {
			t.Errorf("%s: ceiling %g below the published limit", th.Design, th.Ceiling)
		}
	}
	if _, err := Of("no-such-design", Params{}); err == nil {
		t.Error("unknown design accepted")
	}
}

func TestSkewRaisesClockWindowCeiling(t *testing.T) {
	t.Parallel()
	l := rate.Limit{Count: 20, Window: time.Second}
	one, _ := Of(design.RedisClockWindow, Params{Limit: l, Gateways: 4})
	skew, _ := Of(design.RedisClockWindow, Params{Limit: l, Gateways: 4, Skew: 200 * time.Millisecond})
	if !(skew.Ceiling > one.Ceiling) {
		t.Errorf("skewed ceiling %g not above single-clock %g", skew.Ceiling, one.Ceiling)
	}
}

func TestParamsRefuseNonsense(t *testing.T) {
	t.Parallel()
	ok := Params{Limit: rate.Limit{Count: 100, Window: time.Minute}, Gateways: 5}
	tests := []struct {
		name string
		edit func(*Params)
		want string
	}{
		{"negative lease", func(p *Params) { p.Lease = -5 }, "lease -5"},
		{"negative capacity", func(p *Params) { p.Capacity = -1 }, "capacity -1"},
		{"negative skew", func(p *Params) { p.Skew = -time.Second }, "clock skew -1s"},
		{"no gateways", func(p *Params) { p.Gateways = 0 }, "gateways 0"},
		{"no limit", func(p *Params) { p.Limit = rate.Limit{} }, "limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ok
			tt.edit(&p)
			_, err := Of(design.RedisFixedWindow, p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Of: %v; want an error naming %q", err, tt.want)
			}
		})
	}
	if _, err := Of(design.Leasing, ok); err != nil {
		t.Errorf("valid params refused: %v", err)
	}
}

// A span shorter than the window holds less for designs whose allowance
// grows with time, and the window's ceiling for those whose worst case is
// one instant (a boundary).
func TestSpanCeiling(t *testing.T) {
	t.Parallel()
	p := Params{Limit: rate.Limit{Count: 10, Window: 2 * time.Second}, Gateways: 3}
	tests := []struct {
		design string
		span   time.Duration
		want   float64
	}{
		{design.RedisTokenBucket, time.Second, 10 + 5 - 1},
		{design.RedisTokenBucket, 2 * time.Second, 19},
		{design.RedisTokenBucket, time.Minute, 19},
		{design.RedisGCRA, 100 * time.Millisecond, 10},
		{design.LocalTokenBucket, time.Second, 3 * 14},
		{design.RedisSlidingWindow, time.Second, 15},
		{design.RedisSlidingWindow, 1999 * time.Millisecond, 19},
		{design.RedisSlidingLog, time.Second, 10},
		{design.RedisFixedWindow, 100 * time.Millisecond, 20},
		{design.LocalFixedWindow, time.Second, 60},
	}
	for _, tt := range tests {
		got, err := SpanCeiling(tt.design, p, tt.span)
		if err != nil {
			t.Fatal(err)
		}
		full, _ := Of(tt.design, p)
		if got != tt.want || got > full.Ceiling {
			t.Errorf("%s over %s: %g; want %g, at most the window's %g", tt.design, tt.span, got, tt.want, full.Ceiling)
		}
	}
	if _, err := SpanCeiling(design.RedisGCRA, p, 0); err == nil {
		t.Error("a zero span accepted")
	}
}

// TestEnvelope: the envelope slipped is measured against is the design's
// own burst (a bucket's capacity, the log's L, leasing's overage of one
// slice per gateway), 2L when the design is unknown, always refilled at
// L per W.
func TestEnvelope(t *testing.T) {
	t.Parallel()
	lim := rate.Limit{Count: 100, Window: 10 * time.Second}
	for _, tt := range []struct {
		design string
		p      Params
		burst  float64
	}{
		{"", Params{Limit: lim, Gateways: 5}, 200},
		{design.LocalFixedWindow, Params{Limit: lim, Gateways: 5}, 200},
		{design.RedisFixedWindow, Params{Limit: lim, Gateways: 5}, 200},
		{design.RedisSlidingLog, Params{Limit: lim, Gateways: 5}, 100},
		{design.RedisTokenBucket, Params{Limit: lim, Gateways: 5}, 100},
		{design.LocalTokenBucket, Params{Limit: lim, Gateways: 5, Capacity: 30}, 30},
		{design.RedisGCRA, Params{Limit: lim, Gateways: 5, Capacity: 40}, 40},
		{design.Leasing, Params{Limit: lim, Gateways: 5, Lease: 20}, 200 + 20*5},
		{design.Leasing, Params{Limit: lim, Gateways: 5}, 200 + float64(DefaultLease(lim))*5},
	} {
		burst, perSecond := Envelope(tt.design, tt.p)
		if burst != tt.burst || perSecond != 10 {
			t.Errorf("%q %+v: envelope (%g, %g/s), want (%g, 10/s)", tt.design, tt.p, burst, perSecond, tt.burst)
		}
	}
}

// TestSkewedTokenBucketIsUnbounded runs redis-token-bucket on a real Redis
// with two gateways whose clocks are 50s apart (10 per 100s: 5 tokens of
// refill), alternating without any time passing: each time the gateway
// ahead follows the one behind, the bucket refills again. Far more than the
// theory's lower bound get through in no time at all, so the theory must
// call the design unbounded; without skew its bound holds.
func TestSkewedTokenBucketIsUnbounded(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	client := srv.Client(t)
	l := rate.Limit{Count: 10, Window: 100 * time.Second}
	base := time.Now()
	const skew = 50 * time.Second
	cfg := limiter.Config{Algorithm: design.RedisTokenBucket, Limit: l, Clock: limiter.ClockGateway, Prefix: "skew:"}
	behind, err := limiter.New(cfg, client, func() time.Time { return base })
	if err != nil {
		t.Fatal(err)
	}
	ahead, err := limiter.New(cfg, client, func() time.Time { return base.Add(skew) })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	admitted := 0
	for i := range 60 {
		g := behind
		if i%2 == 1 {
			g = ahead
		}
		d, err := g.Allow(ctx, "u", 1)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted++
		}
	}
	th, err := Of(design.RedisTokenBucket, Params{Limit: l, Gateways: 2, Skew: skew})
	if err != nil {
		t.Fatal(err)
	}
	if float64(admitted) <= th.Ceiling {
		t.Fatalf("%d admitted in no time, not above the theory's %g: the test shows nothing", admitted, th.Ceiling)
	}
	if th.Bounded {
		t.Errorf("%d admitted in no time with clocks %s apart, beyond the theory's bound %g: it must say unbounded", admitted, skew, th.Ceiling)
	}
	if one, _ := Of(design.RedisTokenBucket, Params{Limit: l, Gateways: 2}); !one.Bounded || one.Ceiling != 19 {
		t.Errorf("without skew: %+v, want bounded at capacity 10 + 9", one)
	}
}

// TestWorstSpan: the span a design's ceiling needs agrees with
// SpanCeiling: the ceiling fits in a span a hair longer (SpanCeiling's
// spans leave out their end), and (where it is not an instant) not in
// half a token's interval less. A window counter's 2L comes at one
// boundary; a bucket's needs its L−1 refills, (L−1)/L of W; skewed clock
// windows need W less twice the skew.
func TestWorstSpan(t *testing.T) {
	t.Parallel()
	l := rate.Limit{Count: 100, Window: time.Minute}
	want := map[string]time.Duration{
		design.RedisFixedWindow: 0, design.LocalFixedWindow: 0, design.Leasing: 0, design.RedisSlidingLog: 0,
		design.RedisTokenBucket: 59400 * time.Millisecond, design.RedisGCRA: 59400 * time.Millisecond,
		design.RedisSlidingWindow: 58800 * time.Millisecond,
	}
	for _, p := range []Params{{Limit: l, Gateways: 50}, {Limit: l, Gateways: 5, Skew: 5 * time.Second}} {
		for _, th := range All(p) {
			if th.Worst == "" {
				t.Errorf("%s: no words for where its worst burst falls", th.Design)
			}
			if w, ok := want[th.Design]; ok && p.Skew == 0 && th.WorstSpan != w {
				t.Errorf("%s: worst span %s, want %s", th.Design, th.WorstSpan, w)
			}
			if th.WorstSpanMs != float64(th.WorstSpan.Milliseconds()) {
				t.Errorf("%s: worst_span_ms %g for %s", th.Design, th.WorstSpanMs, th.WorstSpan)
			}
			in, _ := SpanCeiling(th.Design, p, th.WorstSpan+time.Millisecond)
			if in != th.Ceiling {
				t.Errorf("%s %+v: %g fit in its worst span %s, want the ceiling %g", th.Design, p, in, th.WorstSpan, th.Ceiling)
			}
			if less := th.WorstSpan - l.Window/time.Duration(2*l.Count); th.Bounded && th.WorstSpan > 0 {
				if got, _ := SpanCeiling(th.Design, p, less); got >= th.Ceiling {
					t.Errorf("%s %+v: the ceiling %g fits in %s too, less than its worst span %s", th.Design, p, got, less, th.WorstSpan)
				}
			}
		}
	}
	skewed, _ := Of(design.RedisClockWindow, Params{Limit: l, Gateways: 5, Skew: 5 * time.Second})
	if skewed.WorstSpan != 50*time.Second {
		t.Errorf("clock window with 5s skew: worst span %s, want 50s (W − 2×skew)", skewed.WorstSpan)
	}
}
