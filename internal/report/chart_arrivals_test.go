package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/score"
)

// herdScenario is a scenario whose clients retried: 40 requests arrived
// in the 10 ms after the reset at t=2s, a few before and after.
func herdScenario(arrivals bool) Scenario {
	res := &analysis.Result{Metrics: analysis.Metrics{metric.HerdPeak: 40, metric.Relimited: 0.75}}
	if arrivals {
		res.HerdAt = 2 * time.Second
		for b := range int((analysis.ArrivalBefore + analysis.ArrivalAfter) / analysis.ArrivalBin) {
			at := time.Duration(b)*analysis.ArrivalBin - analysis.ArrivalBefore
			v, r := 1.0, 0.0
			if at == 0 {
				v, r = 40, 38
			}
			res.Arrivals = append(res.Arrivals, analysis.Point{At: at, Value: v})
			res.RetryArrivals = append(res.RetryArrivals, analysis.Point{At: at, Value: r})
		}
	}
	return Scenario{Name: "herd-no-jitter", Status: score.StatusPass, Limit: Limit{Count: 100, WindowMs: 1000},
		Metrics: map[string]float64(res.Metrics), Result: res}
}

// A run whose clients retried gets the chart of arrivals around the reset
// where the herd came: drawn lines, its own id, and a caption with the
// herd's figures; a run without them gets no such chart.
func TestArrivalsChart(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := HTML(&buf, &Report{Status: score.StatusPass, Scenarios: []Scenario{herdScenario(true)}}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	re := regexp.MustCompile(`(?s)<figure class="chart" data-chart="arrivals" id="chart-herd-no-jitter-arrivals"><h3[^>]*>[^<]*</h3><svg[^>]*>.*?<path[^>]* d="M[^"]+".*?</svg>\s*<figcaption>([^<]*)</figcaption>`)
	m := re.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no arrivals chart with drawn lines in report.html")
	}
	for _, want := range []string{"t=2.000s", "herd_peak 40", "100/s", "75% of retries were denied again"} {
		if !strings.Contains(m[1], want) {
			t.Errorf("caption %q lacks %q", m[1], want)
		}
	}
	buf.Reset()
	if err := HTML(&buf, &Report{Status: score.StatusPass, Scenarios: []Scenario{herdScenario(false)}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), `data-chart="arrivals"`) {
		t.Error("an arrivals chart without arrivals")
	}
}
