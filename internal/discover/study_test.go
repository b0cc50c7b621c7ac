package discover

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/limiter"
)

// studyTarget is one limiter with a known answer, started afresh for
// every run of the study.
type studyTarget struct {
	name  string
	start func(t *testing.T, redisAddr string, run int) []string
	want  want
}

func studyTargets() []studyTarget {
	var out []studyTarget
	cases := gatewayCases()
	for _, name := range design.Names() {
		c := cases[name]
		out = append(out, studyTarget{name: "gateway/" + name, want: c.want, start: func(t *testing.T, addr string, run int) []string {
			cfg := c.cfg
			cfg.Algorithm = name
			cfg.Prefix = fmt.Sprintf("rl:study:%s:%d:", name, run)
			return gatewayOf(t, addr, cfg, 1)
		}})
	}
	// Windows that are no round figure, so the study shows what is
	// measured, not the round value a bracket holding it snaps to.
	for _, name := range []string{design.RedisFixedWindow, design.RedisClockWindow, design.RedisSlidingLog} {
		out = append(out, studyTarget{name: "gateway/" + name + "/1.3s", want: want{class: cases[name].want.class, limit: 15, window: 1300 * time.Millisecond, aligned: cases[name].want.aligned},
			start: func(t *testing.T, addr string, run int) []string {
				return gatewayOf(t, addr, limiter.Config{Algorithm: name, Limit: lim(15, 1300*time.Millisecond), Prefix: fmt.Sprintf("rl:study13:%s:%d:", name, run)}, 1)
			}})
	}
	out = append(out,
		studyTarget{name: "redis_rate/7s", want: want{class: TokenBucket, rate: 7, burst: 13, aligned: AlignNone},
			start: func(t *testing.T, addr string, _ int) []string {
				return []string{redisRateServer(t, addr, redis_rate.Limit{Rate: 7, Burst: 13, Period: time.Second})}
			}},
		studyTarget{name: "redis_rate", want: want{class: TokenBucket, rate: 10, burst: 20, aligned: AlignNone},
			start: func(t *testing.T, addr string, _ int) []string {
				return []string{redisRateServer(t, addr, redis_rate.Limit{Rate: 10, Burst: 20, Period: time.Second})}
			}},
	)
	return append(out, nginxStudyTargets()...)
}

// studyRun is one run's figures against the known answer.
type studyRun struct {
	classOK bool
	errs    map[string]float64 // figure → relative error
	other   map[string]bool    // aligned, denials_count: right or not
	secs    float64
	over    bool // an identity over budget
}

// TestStudyAccuracy is the accuracy study: every known-answer target,
// RLCTL_STUDY_RUNS times (default 20), each run a fresh limiter, and per
// target and figure the share of runs within 10%, the mean and worst
// relative error, and the class's accuracy. It is long (minutes), so it
// runs only with RLCTL_STUDY=1:
//
//	RLCTL_STUDY=1 go test -run Study -timeout 60m -v ./internal/discover
func TestStudyAccuracy(t *testing.T) {
	if os.Getenv("RLCTL_STUDY") == "" {
		t.Skip("the accuracy study runs with RLCTL_STUDY=1 (minutes)")
	}
	runs := 20
	if v, err := strconv.Atoi(os.Getenv("RLCTL_STUDY_RUNS")); err == nil && v > 0 {
		runs = v
	}
	srv := startRedis(t)
	targets := studyTargets()
	results := make([][]studyRun, len(targets))
	// Three targets at a time: the machine has two cores and the runs
	// must not measure each other's load.
	sem := make(chan struct{}, 3)
	var wg sync.WaitGroup
	for i, tg := range targets {
		wg.Go(func() {
			for r := range runs {
				sem <- struct{}{}
				t.Run(fmt.Sprintf("%s/%d", tg.name, r), func(t *testing.T) {
					results[i] = append(results[i], studyOnce(t, tg, srv.Addr, r))
				})
				<-sem
			}
		})
	}
	wg.Wait()
	var b strings.Builder
	fmt.Fprintf(&b, "\naccuracy study: %d runs per target\n", runs)
	fmt.Fprintf(&b, "%-32s %-8s %-10s %s\n", "target", "class", "secs", "figure: within 10% (mean err, worst err); other: right")
	for i, tg := range targets {
		rs := results[i]
		ok, secs, over := 0, 0.0, 0
		figs := map[string][]float64{}
		other := map[string]int{}
		for _, r := range rs {
			if r.classOK {
				ok++
			}
			if r.over {
				over++
			}
			secs += r.secs
			for k, v := range r.errs {
				figs[k] = append(figs[k], v)
			}
			for k, v := range r.other {
				if v {
					other[k]++
				}
			}
		}
		var parts []string
		names := make([]string, 0, len(figs))
		for k := range figs {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			es := figs[k]
			in, sum, worst := 0, 0.0, 0.0
			for _, e := range es {
				if e <= 0.1 {
					in++
				}
				sum += e
				worst = max(worst, e)
			}
			parts = append(parts, fmt.Sprintf("%s: %d/%d (%.1f%%, %.1f%%)", k, in, len(es), 100*sum/float64(len(es)), 100*worst))
		}
		for _, k := range []string{"aligned", "denials_count"} {
			if _, ok := rs[0].other[k]; ok {
				parts = append(parts, fmt.Sprintf("%s: %d/%d", k, other[k], len(rs)))
			}
		}
		if over > 0 {
			parts = append(parts, fmt.Sprintf("OVER BUDGET in %d runs", over))
		}
		fmt.Fprintf(&b, "%-32s %2d/%-5d %-10.1f %s\n", tg.name, ok, len(rs), secs/float64(max(len(rs), 1)), strings.Join(parts, "; "))
	}
	t.Log(b.String())
}

// studyOnce runs discover once against a fresh instance of tg and scores
// it without failing the test: the study reports, it does not gate.
func studyOnce(t *testing.T, tg studyTarget, addr string, run int) studyRun {
	urls := tg.start(t, addr, run)
	start := time.Now()
	res, over := discoverQuiet(t, 300, urls...)
	r := studyRun{errs: map[string]float64{}, other: map[string]bool{}, secs: time.Since(start).Seconds(), over: over}
	if res == nil {
		return r
	}
	p, w := res.Policy, tg.want
	r.classOK = res.Found && p.Algorithm == w.class
	rel := func(got, want float64) float64 { return math.Abs(got-want) / want }
	if w.limit > 0 {
		r.errs["limit"] = rel(float64(p.Limit), float64(w.limit))
	}
	if w.window > 0 {
		r.errs["window_ms"] = rel(float64(p.WindowMS), float64(w.window.Milliseconds()))
	}
	if w.rate > 0 {
		r.errs["rate_per_s"] = rel(p.RatePerS, w.rate)
	}
	if w.burst > 0 {
		r.errs["burst"] = rel(p.Burst, w.burst)
	}
	if w.aligned != "" {
		r.other["aligned"] = p.Aligned == w.aligned
	}
	if w.class != LeakyBucket {
		r.other["denials_count"] = p.DenialsCount != nil && *p.DenialsCount == w.denials
	}
	if !r.classOK {
		t.Logf("class %q, want %q: %s", p.Algorithm, w.class, p.Evidence["algorithm"].Evidence)
	}
	return r
}
