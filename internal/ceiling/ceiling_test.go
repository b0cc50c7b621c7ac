package ceiling

import (
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/limiter"
	"github.com/rlctl/rlctl/internal/rate"
)

func TestTheoryKnownCeilings(t *testing.T) {
	t.Parallel()
	p := Params{Limit: rate.Limit{Count: 100, Window: time.Minute}, Gateways: 50, Lease: 20}
	tests := []struct {
		design  string
		aligned float64
		ceiling float64
	}{
		{limiter.LocalFixedWindow, 5000, 10000},
		{limiter.RedisFixedWindow, 100, 200},
		{limiter.RedisFixedWindowRefresh, 100, 100},
		{limiter.RedisSlidingLog, 100, 100},
		{limiter.RedisTokenBucket, 199, 199},
		{limiter.Leasing, 100 + 20*50, 200 + 20*50},
		{limiter.RedisGetIncr, 149, 298},
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
	one, _ := Of(limiter.RedisClockWindow, Params{Limit: l, Gateways: 4})
	skew, _ := Of(limiter.RedisClockWindow, Params{Limit: l, Gateways: 4, Skew: 200 * time.Millisecond})
	if !(skew.Ceiling > one.Ceiling) {
		t.Errorf("skewed ceiling %g not above single-clock %g", skew.Ceiling, one.Ceiling)
	}
}
