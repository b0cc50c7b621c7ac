package report

import (
	"slices"
	"strings"
	"testing"
)

func labels(ts []tick) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.label)
	}
	return out
}

// Time axes are marked in readable seconds, about six of them, never
// "0.00" and "2.50" alone, nor 0.025, 0.125 …
func TestTimeTicks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		end  float64
		want []string
	}{
		{3, []string{"0s", "0.5s", "1s", "1.5s", "2s", "2.5s", "3s"}},
		{2.5, []string{"0s", "0.5s", "1s", "1.5s", "2s", "2.5s"}},
		{5, []string{"0s", "1s", "2s", "3s", "4s", "5s"}},
		{12.5, []string{"0s", "2.5s", "5s", "7.5s", "10s", "12.5s"}},
		{44.1, []string{"0s", "10s", "20s", "30s", "40s"}},
		{0.3, []string{"0s", "0.05s", "0.1s", "0.15s", "0.2s", "0.25s", "0.3s"}},
		{120, []string{"0s", "20s", "40s", "60s", "80s", "100s", "120s"}},
	} {
		if got := labels(timeTicks(tc.end)); !slices.Equal(got, tc.want) {
			t.Errorf("timeTicks(%v) = %q, want %q", tc.end, got, tc.want)
		}
	}
}

// Count axes start at 0 and end on a round tick at or above the data, so
// the highest point never touches the top.
func TestCountTicks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		hi   float64
		want []string
	}{
		{23, []string{"0", "5", "10", "15", "20", "25"}},
		{4.6, []string{"0", "1", "2", "3", "4", "5"}},
		{0, []string{"0", "0.2", "0.4", "0.6", "0.8", "1"}},
		{1150, []string{"0", "250", "500", "750", "1000", "1250"}},
	} {
		if got := labels(countTicks(tc.hi)); !slices.Equal(got, tc.want) {
			t.Errorf("countTicks(%v) = %q, want %q", tc.hi, got, tc.want)
		}
	}
}

// A real failover's election is shaded from the old primary's first refused
// write to the new one's first accepted write, and named in the legend.
func TestTimeChartShadesElection(t *testing.T) {
	t.Parallel()
	sc := fixture().Scenarios[0]
	sc.Faults = []Fault{{Action: "kill-primary", FromMs: 1000, ElectionFromMs: 1010, ElectionToMs: 2500}}
	spans := spansOf(sc, 5)
	var got []span
	for _, s := range spans {
		if s.Class == "election" {
			got = append(got, s)
		}
	}
	if len(got) != 1 || got[0].From != 1.01 || got[0].To != 2.5 {
		t.Fatalf("election spans %+v, want one from 1.01s to 2.5s", got)
	}
	for _, c := range scenarioCharts(sc) {
		if c.Kind != ChartTimeline {
			continue
		}
		if svg := string(c.SVG); !strings.Contains(svg, `class="election" data-action="election"`) || !strings.Contains(svg, ">election<") {
			t.Errorf("timeline has no shaded, labelled election")
		}
	}
}

// Every time chart marks the faults and outages, and the measured line is
// drawn after (above) the limit line.
func TestTimeChartMarksFaultsAndDrawsMeasuredOnTop(t *testing.T) {
	t.Parallel()
	sc := fixture().Scenarios[0]
	for _, c := range scenarioCharts(sc) {
		if c.Kind != ChartTimeline && c.Kind != ChartSliding {
			continue
		}
		svg := string(c.SVG)
		for _, want := range []string{`class="fault" data-action="redis-latency"`, `class="fault instant" data-action="failover"`, `class="outage"`} {
			if !strings.Contains(svg, want) {
				t.Errorf("%s: no %s", c.Kind, want)
			}
		}
		if l, m := strings.Index(svg, `class="limit"`), strings.Index(svg, `class="measured"`); l < 0 || m < l {
			t.Errorf("%s: the measured line (at %d) is not drawn after the limit line (at %d)", c.Kind, m, l)
		}
	}
}
