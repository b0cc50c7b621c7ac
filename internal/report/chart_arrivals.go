package report

import (
	"fmt"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/rlctl/rlctl/internal/analysis"
)

// ChartArrivals is the data-chart attribute of the arrivals-around-a-reset
// chart.
const ChartArrivals = "arrivals"

// arrivalsChart draws the requests of the herd's identity arriving per
// analysis.ArrivalBin around the reset where herd_peak was counted, the
// retries among them as a second line and the reset itself as a dashed
// vertical line: clients told the same moment show as one spike there,
// jittered ones as a spread. It returns nil when the run had no retries.
func arrivalsChart(sc Scenario) (*chart, error) {
	res := sc.Result
	if res == nil || len(res.Arrivals) == 0 {
		return nil, nil
	}
	p := newPlot(fmt.Sprintf("arrivals per %s around a reset", analysis.ArrivalBin), "ms from the reset", "requests")
	series := func(pts []analysis.Point) plotter.XYs {
		xys := make(plotter.XYs, 0, len(pts))
		for _, pt := range pts {
			xys = append(xys, plotter.XY{X: float64(pt.At.Milliseconds()), Y: pt.Value})
		}
		return xys
	}
	all, err := plotter.NewLine(series(res.Arrivals))
	if err != nil {
		return nil, fmt.Errorf("draw arrivals chart: %w", err)
	}
	all.Color, all.Width = seriesColor, vg.Points(1.2)
	p.Add(all)
	p.Legend.Add("all requests", all)
	peak := 0.0
	for _, pt := range res.Arrivals {
		peak = max(peak, pt.Value)
	}
	if len(res.RetryArrivals) > 0 {
		retries, err := plotter.NewLine(series(res.RetryArrivals))
		if err != nil {
			return nil, fmt.Errorf("draw arrivals chart: %w", err)
		}
		retries.Color, retries.Width = barColor, vg.Points(1.2)
		p.Add(retries)
		p.Legend.Add("retries", retries)
	}
	reset, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 0, Y: max(peak, 1) * 1.1}})
	if err != nil {
		return nil, fmt.Errorf("draw arrivals chart: %w", err)
	}
	reset.Color, reset.Width = limitColor, vg.Points(1.5)
	reset.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	p.Add(reset)
	p.Legend.Add("reset", reset)
	p.Legend.Top = true
	p.Y.Min = 0
	p.Y.Max = max(peak, 1) * 1.3
	svg, err := renderSVG(p)
	if err != nil {
		return nil, fmt.Errorf("draw arrivals chart: %w", err)
	}
	caption := fmt.Sprintf("Requests of one identity arriving per %s around the reset at t=%.3fs, where the most arrived within %s (herd_peak %s against a limit of %s).",
		analysis.ArrivalBin, res.HerdAt.Seconds(), analysis.HerdSpan, num(sc.Metrics[analysis.HerdPeak]), sc.Limit)
	if v, ok := sc.Metrics[analysis.Relimited]; ok {
		caption += fmt.Sprintf(" %.0f%% of retries were denied again.", 100*v)
	}
	return &chart{Kind: ChartArrivals, ID: "chart-" + anchor(sc.Name) + "-" + ChartArrivals, Caption: caption, SVG: svg}, nil
}
