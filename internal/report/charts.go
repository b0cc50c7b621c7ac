package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/rlctl/rlctl/internal/analysis"
)

// Chart kinds, also the data-chart attribute of each <figure>.
const (
	ChartTimeline = "timeline"
	ChartSliding  = "sliding"
	ChartLatency  = "latency"
	ChartGateways = "gateways"
)

// maxPoints bounds a drawn series; longer ones are reduced keeping each
// bucket's peak, so a limit crossing never disappears from the picture.
const maxPoints = 1500

const (
	chartWidth  = 7 * vg.Inch
	chartHeight = 3.2 * vg.Inch
)

var (
	seriesColor = color.RGBA{R: 0x09, G: 0x69, B: 0xda, A: 0xff}
	limitColor  = color.RGBA{R: 0xcf, G: 0x22, B: 0x2e, A: 0xff}
	barColor    = color.RGBA{R: 0x1a, G: 0x7f, B: 0x37, A: 0xff}
)

// chart is one rendered chart for the HTML template.
type chart struct {
	Kind    string
	ID      string
	Caption string
	SVG     template.HTML
}

// scenarioCharts draws the charts a scenario's series allow; none without
// a Result.
func scenarioCharts(sc Scenario) ([]chart, error) {
	res := sc.Result
	if res == nil {
		return nil, nil
	}
	limit := sc.Limit.Rate()
	var out []chart
	add := func(kind, caption string, p *plot.Plot) error {
		svg, err := renderSVG(p)
		if err != nil {
			return fmt.Errorf("draw %s chart: %w", kind, err)
		}
		out = append(out, chart{Kind: kind, ID: "chart-" + anchor(sc.Name) + "-" + kind, Caption: caption, SVG: svg})
		return nil
	}

	if len(res.Timeline) > 0 && res.Interval > 0 {
		// The timeline counts every identity, and the limit is per
		// identity, so the line is the limit times the identities.
		ids := max(len(res.PerIdentity), 1)
		perInterval := float64(limit.Count) * float64(ids) * float64(res.Interval) / float64(limit.Window)
		p := newPlot(fmt.Sprintf("allowed per %s", res.Interval), "time (s)", "allowed")
		if err := addSeries(p, res.Timeline, perInterval); err != nil {
			return nil, err
		}
		who := "the published limit"
		if ids > 1 {
			who = fmt.Sprintf("the published limit for all %d identities", ids)
		}
		caption := fmt.Sprintf("Allowed requests per %s interval, all identities; the red line is %s scaled to the interval (%s per identity = %s per %s).",
			res.Interval, who, sc.Limit, num(perInterval), res.Interval)
		if err := add(ChartTimeline, caption, p); err != nil {
			return nil, err
		}
	}
	if len(res.Sliding) > 0 {
		p := newPlot(fmt.Sprintf("allowed in the trailing %s", limit.Window), "time (s)", "allowed")
		if err := addSeries(p, res.Sliding, float64(limit.Count)); err != nil {
			return nil, err
		}
		caption := fmt.Sprintf("The worst identity's allowed count in the trailing %s window over time; the red line is the published limit (%d).", limit.Window, limit.Count)
		if err := add(ChartSliding, caption, p); err != nil {
			return nil, err
		}
	}
	if len(res.Percentiles) > 0 {
		p := newPlot("latency by percentile", "percentile", "latency (ms)")
		xys := make(plotter.XYs, 0, len(res.Percentiles))
		for _, pp := range res.Percentiles {
			if finite(pp.Percentile) && finite(pp.Millis) && pp.Percentile >= 0 {
				xys = append(xys, plotter.XY{X: nines(pp.Percentile), Y: pp.Millis})
			}
		}
		if len(xys) > 0 {
			l, err := plotter.NewLine(xys)
			if err != nil {
				return nil, fmt.Errorf("draw latency chart: %w", err)
			}
			l.Color, l.Width = seriesColor, vg.Points(1.5)
			p.Add(l)
			p.X.Min, p.X.Max = 0, maxNines
			p.X.Tick.Marker = ninesTicks{}
			p.Y.Min = 0
			caption := "Latency from the intended send time, by percentile (tail stretched: each step right is one more nine), all gateways."
			if v, ok := sc.Metrics[analysis.P99]; ok {
				caption += fmt.Sprintf(" p99 = %sms.", num(v))
			}
			if err := add(ChartLatency, caption, p); err != nil {
				return nil, err
			}
		}
	}
	if len(res.PerGateway) > 0 {
		p := newPlot("allowed per gateway", "gateway", "allowed")
		vals := make(plotter.Values, len(res.PerGateway))
		names := make([]string, len(res.PerGateway))
		for i, g := range res.PerGateway {
			vals[i] = float64(g.Allowed)
			names[i] = g.Gateway
		}
		bars, err := plotter.NewBarChart(vals, barWidth(len(vals)))
		if err != nil {
			return nil, fmt.Errorf("draw gateway chart: %w", err)
		}
		bars.Color, bars.LineStyle.Width = barColor, 0
		p.Add(bars)
		if len(names) <= 16 {
			p.NominalX(names...)
		}
		p.Y.Min = 0
		caption := fmt.Sprintf("Allowed requests per gateway (%d gateways).", len(vals))
		if err := add(ChartGateways, caption, p); err != nil {
			return nil, err
		}
	}
	c, err := arrivalsChart(sc)
	if err != nil {
		return nil, err
	}
	if c != nil {
		out = append(out, *c)
	}
	return out, nil
}

// maxNines is where the percentile axis ends: 99.999, and 100 is drawn
// there too.
const maxNines = 5

// nines maps a percentile to "how many nines": 90 -> 1, 99 -> 2, 99.9 -> 3,
// so the tail, where limiters hurt, gets as much room as the median.
func nines(p float64) float64 {
	if p >= 100 {
		return maxNines
	}
	return min(math.Log10(100/(100-p)), maxNines)
}

// ninesTicks labels the percentile axis at 0, 90, 99, 99.9, ...
type ninesTicks struct{}

func (ninesTicks) Ticks(lo, hi float64) []plot.Tick {
	labels := []string{"0", "90", "99", "99.9", "99.99", "99.999"}
	var out []plot.Tick
	for i, l := range labels {
		if v := float64(i); v >= lo && v <= hi {
			out = append(out, plot.Tick{Value: v, Label: l})
		}
	}
	return out
}

func barWidth(n int) vg.Length {
	w := (chartWidth - vg.Inch) / vg.Length(max(n, 1)) * 0.7
	return min(max(w, vg.Points(1)), vg.Points(40))
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	sans(&p.Title.TextStyle.Font)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		sans(&a.Label.TextStyle.Font)
		sans(&a.Tick.Label.Font)
	}
	sans(&p.Legend.TextStyle.Font)
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	return p
}

// sans switches a plot font to sans-serif, which reads better on screen.
// The font gives layout metrics only: the SVG names the family and the
// browser uses a local one, so nothing is fetched.
func sans(f *font.Font) {
	f.Typeface, f.Variant = "Liberation", "Sans"
}

// addSeries draws pts as a line over time (seconds) with the limit as a
// horizontal line across the same span.
func addSeries(p *plot.Plot, pts []analysis.Point, limit float64) error {
	pts = reduce(pts, maxPoints)
	xys := make(plotter.XYs, 0, len(pts))
	for _, pt := range pts {
		if finite(pt.Value) {
			xys = append(xys, plotter.XY{X: pt.At.Seconds(), Y: pt.Value})
		}
	}
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("draw series: %w", err)
	}
	l.Color, l.Width = seriesColor, vg.Points(1.2)
	first, last := xys[0].X, xys[len(xys)-1].X
	if last == first {
		last = first + 1
	}
	lim, err := plotter.NewLine(plotter.XYs{{X: first, Y: limit}, {X: last, Y: limit}})
	if err != nil {
		return fmt.Errorf("draw limit line: %w", err)
	}
	lim.Color, lim.Width = limitColor, vg.Points(1.5)
	lim.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	p.Add(l, lim)
	p.Legend.Add("measured", l)
	p.Legend.Add("published limit", lim)
	p.Legend.Top = true
	p.Y.Min = 0
	// Headroom above the highest of data and limit keeps the legend, drawn
	// top right, off the lines.
	p.Y.Max = max(p.Y.Max, limit) * 1.3
	return nil
}

// reduce keeps at most n points: each bucket of consecutive points becomes
// its peak, at the peak's time.
func reduce(pts []analysis.Point, n int) []analysis.Point {
	if len(pts) <= n || n <= 0 {
		return pts
	}
	out := make([]analysis.Point, 0, n)
	per := (len(pts) + n - 1) / n
	for i := 0; i < len(pts); i += per {
		best := pts[i]
		for _, p := range pts[i:min(i+per, len(pts))] {
			if p.Value > best.Value {
				best = p
			}
		}
		out = append(out, best)
	}
	return out
}

// renderSVG draws p as SVG text fit to go inline in HTML: the XML prolog
// and generator comment removed, fonts named but never fetched.
func renderSVG(p *plot.Plot) (template.HTML, error) {
	c := vgsvg.NewWith(vgsvg.UseWH(chartWidth, chartHeight))
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	s := buf.String()
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	// The canvas sizes itself in points; let CSS scale it to the figure.
	s = strings.Replace(s, "<svg ", `<svg role="img" preserveAspectRatio="xMidYMid meet" `, 1)
	// gonum/plot generates this SVG and escapes every text it draws.
	return template.HTML(s), nil
}
