package report

import (
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/metric"
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

// The drawing's size in SVG units; CSS scales it to its figure.
const (
	svgWidth  = 560
	svgHeight = 260
	// The plot area's margins: the legend above it, tick labels and the
	// axis label below and left of it.
	marginLeft   = 52
	marginRight  = 26
	marginTop    = 30
	marginBottom = 40
)

// Colours of what the charts draw. Fault and outage fills are opaque, so
// they read the same on any screen and a screenshot can find them.
var (
	seriesColor = color.RGBA{R: 0x09, G: 0x69, B: 0xda, A: 0xff}
	limitColor  = color.RGBA{R: 0xcf, G: 0x22, B: 0x2e, A: 0xff}
	barColor    = color.RGBA{R: 0x1a, G: 0x7f, B: 0x37, A: 0xff}
	faultColor  = color.RGBA{R: 0xff, G: 0xdf, B: 0xb0, A: 0xff}
	outageColor = color.RGBA{R: 0xe8, G: 0xd5, B: 0xfb, A: 0xff}
	// electionColor shades a real failover's election.
	electionColor = color.RGBA{R: 0xc8, G: 0xe1, B: 0xff, A: 0xff}
	instantLine   = color.RGBA{R: 0xbc, G: 0x4c, B: 0x00, A: 0xff}
)

func hex(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// chart is one rendered chart for report.html.
type chart struct {
	Kind    string
	ID      string
	Title   string
	Caption string
	SVG     markup
}

// span is a shaded stretch of a time chart, in seconds from the start; an
// instant (From == To) is drawn as a line.
type span struct {
	From, To float64
	Class    string // fault or outage
	Label    string // short, drawn on the chart: "redis-down"
	Title    string // the whole story, as a tooltip
}

// spansOf lists sc's planned faults and unplanned outages, as drawn on
// every time chart; end is the run's end in seconds (a lasting fault with
// no for runs to it).
func spansOf(sc Scenario, end float64) []span {
	var out []span
	for _, f := range sc.Faults {
		from := f.FromMs / 1000
		to := from + f.ForMs/1000
		switch {
		case f.Instant():
			to = from
		case f.ForMs == 0:
			to = end
		}
		out = append(out, span{From: from, To: to, Class: "fault", Label: f.Action, Title: "fault: " + f.Describe()})
		if f.ElectionToMs > 0 {
			from := f.FromMs
			if f.ElectionFromMs > 0 {
				from = min(f.ElectionFromMs, f.ElectionToMs)
			}
			out = append(out, span{From: from / 1000, To: f.ElectionToMs / 1000, Class: "election", Label: "election",
				Title: fmt.Sprintf("election after %s: the old primary stopped taking writes at %s, writes went through again at %s", f.Action, secs(from/1000), secs(f.ElectionToMs/1000))})
		}
	}
	for _, o := range sc.Outages {
		out = append(out, span{From: o.FromMs / 1000, To: o.ToMs / 1000, Class: "outage", Label: "outage",
			Title: fmt.Sprintf("unplanned: Redis did not decide from %s to %s", secs(o.FromMs/1000), secs(o.ToMs/1000))})
	}
	return out
}

// secs prints seconds briefly: "1.25s".
func secs(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) + "s" }

// scenarioCharts draws the charts a scenario's series allow; none without
// a Result.
func scenarioCharts(sc Scenario) []chart {
	res := sc.Result
	if res == nil {
		return nil
	}
	limit := sc.Limit.Rate()
	id := func(kind string) string { return "chart-" + anchor(sc.Name) + "-" + kind }
	end := float64(sc.DurationMs) / 1000
	for _, s := range [][]analysis.Point{res.Timeline, res.Sliding} {
		if n := len(s); n > 0 {
			end = max(end, (s[n-1].At + res.Interval).Seconds())
		}
	}
	spans := spansOf(sc, end)
	var out []chart

	if len(res.Timeline) > 0 && res.Interval > 0 {
		// The timeline counts every identity, and the limit is per
		// identity, so the line is the limit times the identities.
		ids := max(len(res.PerIdentity), 1)
		perInterval := float64(limit.Count) * float64(ids) * float64(res.Interval) / float64(limit.Window)
		who := "the published limit"
		if ids > 1 {
			who = fmt.Sprintf("the published limit for all %d identities", ids)
		}
		title := fmt.Sprintf("allowed per %s", res.Interval)
		out = append(out, chart{Kind: ChartTimeline, ID: id(ChartTimeline), Title: title,
			Caption: fmt.Sprintf("Allowed requests per %s interval, all identities; the red line is %s scaled to the interval (%s per identity = %s per %s).",
				res.Interval, who, sc.Limit, num(perInterval), res.Interval) + spansCaption(spans),
			SVG: timeChart(title, "allowed", res.Timeline, perInterval, end, spans)})
	}
	if len(res.Sliding) > 0 {
		title := fmt.Sprintf("allowed in the trailing %s", limit.Window)
		out = append(out, chart{Kind: ChartSliding, ID: id(ChartSliding), Title: title,
			Caption: fmt.Sprintf("The worst identity's allowed count in the trailing %s window over time; the red line is the published limit (%d).", limit.Window, limit.Count) + spansCaption(spans),
			SVG:     timeChart(title, "allowed", res.Sliding, float64(limit.Count), end, spans)})
	}
	if svg := latencyChart(res.Percentiles); svg != "" {
		caption := "Latency from the intended send time, by percentile (tail stretched: each step right is one more nine), all gateways."
		if v, ok := sc.Metrics[metric.P99]; ok {
			caption += fmt.Sprintf(" p99 = %sms.", num(v))
		}
		out = append(out, chart{Kind: ChartLatency, ID: id(ChartLatency), Title: "latency by percentile", Caption: caption, SVG: svg})
	}
	if len(res.PerGateway) > 0 {
		out = append(out, chart{Kind: ChartGateways, ID: id(ChartGateways), Title: "allowed per gateway",
			Caption: fmt.Sprintf("Allowed requests per gateway (%s).", count(len(res.PerGateway), "gateway")),
			SVG:     gatewayChart(res.PerGateway)})
	}
	if c := arrivalsChart(sc); c != nil {
		out = append(out, *c)
	}
	return out
}

// spanKinds says which kinds of span a chart shows: lasting faults,
// instant faults, unplanned outages.
func spanKinds(spans []span) (faults, instants, outages, elections bool) {
	for _, s := range spans {
		switch {
		case s.Class == "outage":
			outages = true
		case s.Class == "election":
			elections = true
		case s.From == s.To:
			instants = true
		default:
			faults = true
		}
	}
	return faults, instants, outages, elections
}

// spansCaption tells the reader what the marks over the data mean.
func spansCaption(spans []span) string {
	faults, instants, outages, elections := spanKinds(spans)
	var parts []string
	if faults {
		parts = append(parts, "orange shading marks a planned fault while it lasts")
	}
	if instants {
		parts = append(parts, "a dashed orange line an instant fault (a failover, a reset)")
	}
	if elections {
		parts = append(parts, "blue shading the election of a real failover, from the old primary's first refused write to the first write that went through again")
	}
	if outages {
		parts = append(parts, "purple shading a stretch in which Redis did not decide, unplanned")
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.ToUpper(parts[0][:1]) + strings.Join(parts, "; ")[1:] + "."
}

// canvas writes one SVG drawing: a plot area with linear scales.
type canvas struct {
	b                      strings.Builder
	x0, x1, y0, y1         float64 // data ranges
	left, right, top, bott float64 // plot area in SVG units
}

func newCanvas(title string) *canvas {
	c := &canvas{left: marginLeft, right: svgWidth - marginRight, top: marginTop, bott: svgHeight - marginBottom}
	fmt.Fprintf(&c.b, `<svg class="chart-svg" viewBox="0 0 %d %d" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`,
		svgWidth, svgHeight, escape(title))
	fmt.Fprintf(&c.b, `<rect class="plot-area" x="%s" y="%s" width="%s" height="%s" fill="#ffffff" stroke="#d0d7de"/>`,
		f1(c.left), f1(c.top), f1(c.right-c.left), f1(c.bott-c.top))
	return c
}

func (c *canvas) px(x float64) float64 {
	if c.x1 == c.x0 {
		return c.left
	}
	return c.left + (x-c.x0)/(c.x1-c.x0)*(c.right-c.left)
}

func (c *canvas) py(y float64) float64 {
	if c.y1 == c.y0 {
		return c.bott
	}
	return c.bott - (y-c.y0)/(c.y1-c.y0)*(c.bott-c.top)
}

func (c *canvas) svg() markup {
	c.b.WriteString(`</svg>`)
	// Every text written into the drawing was escaped on the way in.
	return markup(c.b.String())
}

// f1 prints an SVG coordinate with one decimal.
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// yAxis draws the horizontal grid and the y tick labels, then the axis
// label turned along the axis.
func (c *canvas) yAxis(ticks []tick, label string) {
	c.b.WriteString(`<g class="axis y-axis">`)
	for _, t := range ticks {
		y := f1(c.py(t.v))
		fmt.Fprintf(&c.b, `<line class="grid" x1="%s" x2="%s" y1="%s" y2="%s" stroke="#eaeef2"/>`, f1(c.left), f1(c.right), y, y)
		fmt.Fprintf(&c.b, `<text class="tick-label" x="%s" y="%s" text-anchor="end" dominant-baseline="middle" font-size="11" fill="#57606a">%s</text>`,
			f1(c.left-6), y, escape(t.label))
	}
	fmt.Fprintf(&c.b, `<text class="axis-label" transform="translate(13 %s) rotate(-90)" text-anchor="middle" font-size="11" fill="#57606a">%s</text>`,
		f1((c.top+c.bott)/2), escape(label))
	c.b.WriteString(`</g>`)
}

// xAxis draws the x tick marks and labels under the plot and the axis
// label below them.
func (c *canvas) xAxis(ticks []tick, label string) {
	c.b.WriteString(`<g class="axis x-axis">`)
	for _, t := range ticks {
		x := f1(c.px(t.v))
		fmt.Fprintf(&c.b, `<line class="tick" x1="%s" x2="%s" y1="%s" y2="%s" stroke="#8c959f"/>`, x, x, f1(c.bott), f1(c.bott+4))
		fmt.Fprintf(&c.b, `<text class="tick-label" x="%s" y="%s" text-anchor="middle" font-size="11" fill="#57606a">%s</text>`,
			x, f1(c.bott+16), escape(t.label))
	}
	fmt.Fprintf(&c.b, `<text class="axis-label" x="%s" y="%s" text-anchor="middle" font-size="11" fill="#57606a">%s</text>`,
		f1((c.left+c.right)/2), f1(svgHeight-6), escape(label))
	c.b.WriteString(`</g>`)
}

// legend draws swatches and names in the band above the plot, left to
// right, so nothing covers the data.
func (c *canvas) legend(items []legendItem) {
	c.b.WriteString(`<g class="legend">`)
	x := c.left
	y := c.top - 12
	for _, it := range items {
		switch it.kind {
		case "line":
			dash := ""
			if it.dashed {
				dash = ` stroke-dasharray="6 3"`
			}
			fmt.Fprintf(&c.b, `<line x1="%s" x2="%s" y1="%s" y2="%s" stroke="%s" stroke-width="2"%s/>`, f1(x), f1(x+18), f1(y), f1(y), it.color, dash)
		default:
			fmt.Fprintf(&c.b, `<rect x="%s" y="%s" width="12" height="10" fill="%s"/>`, f1(x+3), f1(y-5), it.color)
		}
		fmt.Fprintf(&c.b, `<text x="%s" y="%s" dominant-baseline="middle" font-size="11" fill="#1b1f24">%s</text>`, f1(x+22), f1(y), escape(it.label))
		x += 22 + 6.2*float64(len([]rune(it.label))) + 16
	}
	c.b.WriteString(`</g>`)
}

type legendItem struct {
	kind, color, label string
	dashed             bool
}

// spans shades faults and outages over the plot's full height, under the
// lines; an instant gets a line and its label at the top.
func (c *canvas) spans(spans []span) {
	if len(spans) == 0 {
		return
	}
	c.b.WriteString(`<g class="spans">`)
	labels := labelRows{top: c.top + 11}
	for _, s := range spans {
		from, to := max(s.From, c.x0), min(s.To, c.x1)
		if from > c.x1 || to < c.x0 {
			continue
		}
		title := escape(s.Title)
		action := escape(s.Label)
		if s.From == s.To {
			x := f1(c.px(from))
			fmt.Fprintf(&c.b, `<g class="%s instant" data-action="%s"><title>%s</title><line x1="%s" x2="%s" y1="%s" y2="%s" stroke="%s" stroke-width="2" stroke-dasharray="4 2"/>`,
				s.Class, action, title, x, x, f1(c.top), f1(c.bott), hex(instantLine))
			fmt.Fprintf(&c.b, `<text class="span-label" x="%s" y="%s" font-size="10" fill="%s">%s</text></g>`, f1(c.px(from)+3), f1(labels.y(c.px(from), s.Label)), hex(instantLine), action)
			continue
		}
		fill := faultColor
		switch s.Class {
		case "outage":
			fill = outageColor
		case "election":
			fill = electionColor
		}
		w := max(c.px(to)-c.px(from), 2)
		fmt.Fprintf(&c.b, `<rect class="%s" data-action="%s" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`,
			s.Class, action, f1(c.px(from)), f1(c.top+0.5), f1(w), f1(c.bott-c.top-1), hex(fill), title)
		if s.Class == "fault" {
			// Outages go unlabelled: the legend names them, and their
			// spans are often too narrow for a word.
			fmt.Fprintf(&c.b, `<text class="span-label" x="%s" y="%s" font-size="10" fill="#7d4e00">%s</text>`, f1(c.px(from)+3), f1(labels.y(c.px(from), s.Label)), action)
		}
	}
	c.b.WriteString(`</g>`)
}

// labelRows places span labels along the top of the plot, moving one down
// a row when it would run into the label before it.
type labelRows struct {
	top  float64
	ends []float64 // per row, where its last label ends
}

// y is the baseline for a label of text starting at x.
func (r *labelRows) y(x float64, text string) float64 {
	w := 6 * float64(len([]rune(text)))
	for i, end := range r.ends {
		if x >= end+4 {
			r.ends[i] = x + w
			return r.top + 12*float64(i)
		}
	}
	r.ends = append(r.ends, x+w)
	return r.top + 12*float64(len(r.ends)-1)
}

// path draws xys as a polyline of the given class.
func (c *canvas) path(class string, xs, ys []float64, stroke string, width float64, dashed bool) {
	if len(xs) == 0 {
		return
	}
	var d strings.Builder
	for i := range xs {
		if i == 0 {
			d.WriteString("M")
		} else {
			d.WriteString(" L")
		}
		d.WriteString(f1(c.px(xs[i])) + "," + f1(c.py(ys[i])))
	}
	dash := ""
	if dashed {
		dash = ` stroke-dasharray="7 4"`
	}
	fmt.Fprintf(&c.b, `<path class="%s" d="%s" fill="none" stroke="%s" stroke-width="%s" stroke-linejoin="round"%s/>`, class, d.String(), stroke, f1(width), dash)
}

// timeChart draws a series over time in seconds against a horizontal
// limit, with faults and outages shaded. The limit is drawn first, so the
// measured line is never hidden under it.
func timeChart(title, yLabel string, pts []analysis.Point, limit, end float64, spans []span) markup {
	pts = reduce(pts, maxPoints)
	c := newCanvas(title)
	var xs, ys []float64
	top := limit
	for _, p := range pts {
		if finite(p.Value) {
			xs = append(xs, p.At.Seconds())
			ys = append(ys, p.Value)
			top = max(top, p.Value)
		}
	}
	c.x0, c.x1 = 0, max(end, 1e-3)
	xt := timeTicks(c.x1)
	yt := countTicks(top * 1.15)
	c.y0, c.y1 = 0, yt[len(yt)-1].v
	c.spans(spans)
	c.yAxis(yt, yLabel)
	c.xAxis(xt, "time since the run started")
	c.path("limit", []float64{c.x0, c.x1}, []float64{limit, limit}, hex(limitColor), 1.5, true)
	c.path("measured", xs, ys, hex(seriesColor), 1.8, false)
	items := []legendItem{{kind: "line", color: hex(seriesColor), label: "measured"}, {kind: "line", color: hex(limitColor), label: "published limit", dashed: true}}
	faults, instants, outages, elections := spanKinds(spans)
	if faults {
		items = append(items, legendItem{color: hex(faultColor), label: "fault"})
	}
	if instants {
		items = append(items, legendItem{kind: "line", color: hex(instantLine), label: "instant fault", dashed: true})
	}
	if elections {
		items = append(items, legendItem{color: hex(electionColor), label: "election"})
	}
	if outages {
		items = append(items, legendItem{color: hex(outageColor), label: "unplanned outage"})
	}
	c.legend(items)
	return c.svg()
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

// latencyChart draws latency by percentile with the tail stretched; "" when
// there is nothing to draw.
func latencyChart(pcts []analysis.PercentilePoint) markup {
	var xs, ys []float64
	top := 0.0
	for _, p := range pcts {
		if finite(p.Percentile) && finite(p.Millis) && p.Percentile >= 0 {
			xs = append(xs, nines(p.Percentile))
			ys = append(ys, p.Millis)
			top = max(top, p.Millis)
		}
	}
	if len(xs) == 0 {
		return ""
	}
	c := newCanvas("latency by percentile")
	c.x0, c.x1 = 0, maxNines
	var xt []tick
	for i, l := range []string{"0", "90", "99", "99.9", "99.99", "99.999"} {
		xt = append(xt, tick{v: float64(i), label: l})
	}
	yt := countTicks(top * 1.15)
	for i := range yt {
		yt[i].label += "ms"
	}
	c.y0, c.y1 = 0, yt[len(yt)-1].v
	c.yAxis(yt, "latency")
	c.xAxis(xt, "percentile")
	c.path("measured", xs, ys, hex(seriesColor), 1.8, false)
	c.legend([]legendItem{{kind: "line", color: hex(seriesColor), label: "latency from the intended send"}})
	return c.svg()
}

// gatewayChart draws allowed requests per gateway as bars.
func gatewayChart(gws []analysis.GatewayResult) markup {
	c := newCanvas("allowed per gateway")
	top := 0.0
	for _, g := range gws {
		top = max(top, float64(g.Allowed))
	}
	yt := countTicks(max(top, 1) * 1.15)
	c.y0, c.y1 = 0, yt[len(yt)-1].v
	c.x0, c.x1 = 0, float64(len(gws))
	c.yAxis(yt, "allowed")
	// Label every gateway when they fit, else about 12 of them.
	every := max(1, (len(gws)+11)/12)
	var xt []tick
	for i, g := range gws {
		if i%every == 0 {
			xt = append(xt, tick{v: float64(i) + 0.5, label: g.Gateway})
		}
	}
	c.xAxis(xt, "gateway")
	slot := (c.right - c.left) / float64(len(gws))
	w := max(min(slot*0.7, 40), 1)
	c.b.WriteString(`<g class="bars">`)
	for i, g := range gws {
		x := c.px(float64(i)+0.5) - w/2
		y := c.py(float64(g.Allowed))
		fmt.Fprintf(&c.b, `<rect class="bar" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s: %d allowed</title></rect>`,
			f1(x), f1(y), f1(w), f1(c.bott-y), hex(barColor), escape(g.Gateway), g.Allowed)
	}
	c.b.WriteString(`</g>`)
	return c.svg()
}

// tick is one labelled value on an axis.
type tick struct {
	v     float64
	label string
}

// niceStep is the step of about n ticks over span: 1, 2, 2.5 or 5 times a
// power of ten, as a person would mark an axis.
func niceStep(span float64, n int) float64 {
	if span <= 0 || !finite(span) {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// decimals is how many decimals print every multiple of step exactly.
func decimals(step float64) int {
	for d := 0; d < 6; d++ {
		v := step * math.Pow(10, float64(d))
		if math.Abs(v-math.Round(v)) < 1e-9 {
			return d
		}
	}
	return 6
}

// ticksTo marks 0 to at least hi with a nice step (about n ticks); the
// last tick is at or above hi, so it can end the axis.
func ticksTo(hi float64, n int, label func(v float64, dec int) string) []tick {
	step := niceStep(hi, n)
	dec := decimals(step)
	var out []tick
	for i := 0; ; i++ {
		v := float64(i) * step
		out = append(out, tick{v: v, label: label(v, dec)})
		if v >= hi-step*1e-9 || i > 100 {
			return out
		}
	}
}

// roundTo rounds v to dec decimals, so a multiple of a step prints
// without float noise and without trailing zeros (0.5, 1, 1.5).
func roundTo(v float64, dec int) float64 {
	p := math.Pow(10, float64(dec))
	return math.Round(v*p) / p
}

// timeTicks marks a run of end seconds with readable seconds: 0s, 0.5s,
// 1s … or 0s, 10s, 20s …, about 6 of them, never past the end.
func timeTicks(end float64) []tick {
	step := niceStep(end, 6)
	dec := decimals(step)
	var out []tick
	for i := 0; ; i++ {
		v := float64(i) * step
		if v > end+step*1e-9 || i > 100 {
			return out
		}
		out = append(out, tick{v: v, label: strconv.FormatFloat(roundTo(v, dec), 'f', -1, 64) + "s"})
	}
}

// countTicks marks 0 to at least hi with about 5 ticks of a nice step.
func countTicks(hi float64) []tick {
	if hi <= 0 || !finite(hi) {
		hi = 1
	}
	return ticksTo(hi, 5, func(v float64, dec int) string { return strconv.FormatFloat(roundTo(v, dec), 'f', -1, 64) })
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
