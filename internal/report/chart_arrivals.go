package report

import (
	"fmt"
	"math"
	"strconv"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/metric"
)

// ChartArrivals is the data-chart attribute of the arrivals-around-a-reset
// chart.
const ChartArrivals = "arrivals"

// arrivalsChart draws the requests of the herd's identity arriving per
// analysis.ArrivalBin around the reset where herd_peak was counted, the
// retries among them as a second line and the reset itself as a dashed
// vertical line: clients told the same moment show as one spike there,
// jittered ones as a spread. It returns nil when the run had no retries.
func arrivalsChart(sc Scenario) *chart {
	res := sc.Result
	if res == nil || len(res.Arrivals) == 0 {
		return nil
	}
	title := fmt.Sprintf("arrivals per %s around a reset", analysis.ArrivalBin)
	c := newCanvas(title)
	series := func(pts []analysis.Point) (xs, ys []float64) {
		for _, pt := range pts {
			xs = append(xs, float64(pt.At.Microseconds())/1000)
			ys = append(ys, pt.Value)
		}
		return xs, ys
	}
	xs, ys := series(res.Arrivals)
	peak := 1.0
	for _, v := range ys {
		peak = max(peak, v)
	}
	c.x0, c.x1 = xs[0], xs[len(xs)-1]
	if c.x1 <= c.x0 {
		c.x1 = c.x0 + 1
	}
	yt := countTicks(peak * 1.15)
	c.y0, c.y1 = 0, yt[len(yt)-1].v
	c.yAxis(yt, "requests")
	c.xAxis(msTicks(c.x0, c.x1), "ms from the reset")
	c.path("reset", []float64{0, 0}, []float64{c.y0, c.y1}, hex(limitColor), 1.5, true)
	c.path("measured", xs, ys, hex(seriesColor), 1.8, false)
	items := []legendItem{{kind: "line", color: hex(seriesColor), label: "all requests"}}
	if len(res.RetryArrivals) > 0 {
		rx, ry := series(res.RetryArrivals)
		c.path("retries", rx, ry, hex(barColor), 1.4, false)
		items = append(items, legendItem{kind: "line", color: hex(barColor), label: "retries"})
	}
	items = append(items, legendItem{kind: "line", color: hex(limitColor), label: "reset", dashed: true})
	c.legend(items)
	caption := fmt.Sprintf("Requests of one identity arriving per %s around the reset at t=%.3fs, where the most arrived within %s (herd_peak %s against a limit of %s).",
		analysis.ArrivalBin, res.HerdAt.Seconds(), metric.HerdSpan, num(sc.Metrics[metric.HerdPeak]), sc.Limit)
	if v, ok := sc.Metrics[metric.Relimited]; ok {
		caption += fmt.Sprintf(" %.0f%% of retries were denied again.", 100*v)
	}
	return &chart{Kind: ChartArrivals, ID: "chart-" + anchor(sc.Name) + "-" + ChartArrivals, Title: title, Caption: caption, SVG: c.svg()}
}

// msTicks labels an axis of milliseconds that may start below zero, with
// zero (the reset) always among the ticks.
func msTicks(lo, hi float64) []tick {
	step := niceStep(hi-lo, 8)
	dec := decimals(step)
	var out []tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		v := roundTo(v, dec)
		out = append(out, tick{v: v, label: strconv.FormatFloat(v, 'f', -1, 64) + "ms"})
	}
	return out
}
