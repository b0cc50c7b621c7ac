package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/calmtest"
	"github.com/rlctl/rlctl/internal/ceiling"
	"github.com/rlctl/rlctl/internal/rate"
)

// --measure puts a short simulated run beside the theory: a fixed window
// measured under overload and a boundary burst admits more than L in some
// window, and never more than the theory's 2L.
func TestCeilingMeasureWithinTheory(t *testing.T) {
	t.Parallel()
	res := runMeasure(t, "--limit", "10/1s", "--gateways", "3", "--algorithm", "redis-fixed-window", "--measure-duration", "2s")
	if m, th := res.Measured.Ceiling, res.Designs[0].Ceiling; m <= 10 || m > th {
		t.Errorf("measured ceiling %g; want above L = 10 and at most the theory's %g", m, th)
	}
}

// measureOnAQuietMoment runs ceiling --measure with args and returns its
// output, failing unless it exits 0. A run that refused its figure because
// the machine was too busy for rlctl to measure (it says so), whose
// answers came too unevenly to learn a window's edge from, or whose
// boundary traffic fired no shot, is tried again, three times in all
// (calmtest.Retry): that refusal is rlctl telling the truth about its own
// lateness, not the behaviour under test.
func measureOnAQuietMoment(t *testing.T, args ...string) string {
	t.Helper()
	var code int
	var out, errOut *syncBuffer
	calmtest.Retry(t, 3, func(int) string {
		out = &syncBuffer{}
		var f *Factory
		f, errOut = testFactory(out, nil)
		code = Run(f, append([]string{"ceiling", "--measure"}, args...), nil, noExit(t))
		for _, why := range []string{"too busy for rlctl to measure", "straddle a window edge"} {
			if code != 0 && strings.Contains(errOut.String(), why) {
				return errOut.String()
			}
		}
		// A boundary run that found its edge too late to fire a shot left
		// the figure to the constant traffic: measured, but not what the
		// test is about.
		if code == 0 && strings.Contains(out.String(), "fired no shot") {
			return "the boundary traffic fired no shot"
		}
		return ""
	})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	return out.String()
}

// Numbers that make no sense negative or zero are invalid usage, named.
func TestCeilingRefusesNonsenseNumbers(t *testing.T) {
	for _, bad := range [][]string{
		{"--lease", "-5"}, {"--capacity", "-1"}, {"--clock-skew", "-1s"},
		{"--gateways", "0"}, {"--gateways", "-3"}, {"--measure-duration", "-2s"},
	} {
		f, errOut := testFactory(&syncBuffer{}, nil)
		args := append([]string{"ceiling", "--limit", "100/1m", "--algorithm", "leasing"}, bad...)
		if code := Run(f, args, nil, noExit(t)); code != 2 || !strings.Contains(errOut.String(), bad[0]) {
			t.Errorf("%v: exit %d, %q; want 2 naming %s", bad, code, errOut, bad[0])
		}
	}
}

// What this machine cannot measure is refused up front (exit 2, nothing
// on stdout) with the reason, never run out of memory or printed as a
// figure bounded by the offered load.
func TestCeilingMeasureRefusesWhatCannotBeMeasured(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"rate and memory", []string{"--limit", "1000000/1s", "--gateways", "5000"}, "GiB of memory"},
		{"rate", []string{"--limit", "100000/1s"}, "decisions/s"},
		{"window too long", []string{"--limit", "100/1h"}, "whole 1h0m0s window"},
		{"run too long", []string{"--limit", "10/1s", "--measure-duration", "11m"}, "at most 10m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := &syncBuffer{}
			f, errOut := testFactory(out, nil)
			args := append([]string{"ceiling", "--algorithm", "redis-fixed-window", "--measure"}, tt.args...)
			if code := Run(f, args, nil, noExit(t)); code != 2 || !strings.Contains(errOut.String(), tt.want) {
				t.Errorf("exit %d, %q; want 2 saying %q", code, errOut, tt.want)
			}
			if out.String() != "" {
				t.Errorf("a refused measurement printed:\n%s", out)
			}
		})
	}
}

type measuredJSON struct {
	Designs []struct {
		Ceiling float64 `json:"ceiling"`
	} `json:"designs"`
	Measured *struct {
		Window     string  `json:"window"`
		Span       string  `json:"span"`
		SpanMs     float64 `json:"span_ms"`
		FullWindow bool    `json:"full_window"`
		Ceiling    float64 `json:"ceiling"`
		Theory     float64 `json:"theory"`
	} `json:"measured"`
}

func runMeasure(t *testing.T, args ...string) measuredJSON {
	t.Helper()
	out := measureOnAQuietMoment(t, append([]string{"-o", "json"}, args...)...)
	var res measuredJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Measured == nil || len(res.Designs) != 1 {
		t.Fatalf("want one theory and a measurement: %s", out)
	}
	return res
}

// A limit per 2s is measured at its own window, over at least one whole
// window, and the figure lies between L and the theory.
func TestCeilingMeasureCoversAWholeWindow(t *testing.T) {
	t.Parallel()
	res := runMeasure(t, "--limit", "5/2s", "--gateways", "3", "--algorithm", "local-fixed-window")
	m := res.Measured
	if m.Window != "2s" || !m.FullWindow || m.SpanMs < 2000 {
		t.Errorf("window %q, span %s (%gms), full %v; want the 2s window measured whole", m.Window, m.Span, m.SpanMs, m.FullWindow)
	}
	if th := res.Designs[0].Ceiling; m.Ceiling <= 5 || m.Ceiling > th || m.Theory != th {
		t.Errorf("measured %g beside theory %g (%g); want above L = 5 and at most the theory", m.Ceiling, m.Theory, th)
	}
}

// A measurement shorter than the window says so, in JSON and in the text,
// and is compared with the theory for the span it covered, not with the
// window's.
func TestCeilingMeasureShorterThanTheWindow(t *testing.T) {
	t.Parallel()
	args := []string{"--limit", "10/2s", "--algorithm", "redis-token-bucket", "--measure-duration", "1s"}
	res := runMeasure(t, args...)
	m := res.Measured
	if m.FullWindow || m.SpanMs >= 2000 || m.SpanMs <= 0 {
		t.Errorf("span %s (%gms), full %v; want a span shorter than the 2s window", m.Span, m.SpanMs, m.FullWindow)
	}
	p := ceiling.Params{Limit: rate.Limit{Count: 10, Window: 2 * time.Second}, Gateways: 1}
	want, _ := ceiling.SpanCeiling("redis-token-bucket", p, time.Duration(m.SpanMs*float64(time.Millisecond)))
	if m.Theory != want || m.Theory >= res.Designs[0].Ceiling {
		t.Errorf("theory beside the measurement %g; want %g, the theory for the %s span, below the window's %g", m.Theory, want, m.Span, res.Designs[0].Ceiling)
	}

	out := measureOnAQuietMoment(t, args...)
	if !strings.Contains(out, "shorter than the 2s window") || !strings.Contains(out, "not the ceiling itself") {
		t.Errorf("the text does not say the measurement is shorter than the window:\n%s", out)
	}
}

// TestCeilingSaysWhereTheWorstBurstFalls: the table says why the aligned
// and any-window figures differ and how short a span each ceiling needs
// (a boundary's burst an instant, a bucket's refill most of the window),
// and one design's answer says the fixed window's 2L comes around one
// boundary: 100 in a window's last second and 100 in the next's first
// are 200 in 2s.
func TestCeilingSaysWhereTheWorstBurstFalls(t *testing.T) {
	t.Parallel()
	run := func(args ...string) string {
		out := &syncBuffer{}
		f, errOut := testFactory(out, nil)
		if code := Run(f, append([]string{"ceiling", "--limit", "100/1m", "--gateways", "50"}, args...), nil, noExit(t)); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		return out.String()
	}
	all := run()
	for _, want := range []string{"CEILING WITHIN", "straddle a boundary", "local-fixed-window          5000            10000                 100.00×  an instant", "redis-token-bucket          199             199                   1.99×    59.4s"} {
		if !strings.Contains(all, want) {
			t.Errorf("ceiling table lacks %q:\n%s", want, all)
		}
	}
	one := run("--algorithm", "redis-fixed-window")
	if want := "Worst burst (200, within an instant): all at one window boundary"; !strings.Contains(one, want) || !strings.Contains(one, "100 in the last second of a window and 100 in the first second of the next are 200 in 2s") {
		t.Errorf("redis-fixed-window lacks %q and its 200 in 2s:\n%s", want, one)
	}
	var doc struct {
		Designs []ceiling.Theory `json:"designs"`
	}
	if err := json.Unmarshal([]byte(run("--algorithm", "redis-gcra", "-o", "json")), &doc); err != nil || len(doc.Designs) != 1 || doc.Designs[0].WorstSpanMs != 59400 {
		t.Errorf("-o json worst_span_ms: %+v, %v; want 59400 for redis-gcra", doc.Designs, err)
	}
}
