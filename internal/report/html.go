package report

import (
	"bufio"
	_ "embed"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/score"
)

// htmlStyle is report.html's stylesheet, inlined in its <style>.
//
//go:embed report.css
var htmlStyle string

// markup is HTML written as it stands: rlctl's own tags and the charts'
// SVG, never text taken from a report.
type markup string

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "\x00", "\uFFFD")

// escape is s as HTML text, safe in an element or in a quoted attribute.
func escape(s string) string { return htmlEscaper.Replace(s) }

// page writes report.html. A report's values land only in element text
// and in double-quoted attributes, where escape is all HTML needs, and
// its only links are in-page anchors built by anchor; so the page is
// written directly rather than through html/template, whose reflection
// would keep every method of every client library in rlctl's binary.
type page struct{ w *bufio.Writer }

// f writes format with its arguments: markup as it stands, anything else
// as escaped text. Every verb is %v.
func (p page) f(format string, args ...any) {
	for i, a := range args {
		if m, ok := a.(markup); ok {
			args[i] = string(m)
		} else {
			args[i] = escape(fmt.Sprint(a))
		}
	}
	fmt.Fprintf(p.w, format, args...)
}

// verdictClass is the CSS class of a verdict: holds, flaw (demonstrated),
// skip (not run) or bad (anything else).
func verdictClass(sc Scenario) string {
	switch sc.Verdict {
	case score.Holds:
		return "holds"
	case score.FlawShown:
		return "flaw"
	case score.NotRun:
		return "skip"
	}
	return "bad"
}

// badgeClass is the CSS class of a scenario's status badge: its status,
// and a flaw demonstrated's PASS in amber, not the green of a design that
// holds.
func badgeClass(sc Scenario) string {
	if sc.Status == score.StatusPass && sc.Flaw() {
		return sc.Status + " flaw"
	}
	return sc.Status
}

// wbr lets a metric name break after its underscores, so a table of many
// figures fits the page.
func wbr(s string) markup { return markup(strings.ReplaceAll(escape(s), "_", "_<wbr>")) }

// HTML writes report.html: one self-contained page (inline CSS, inline SVG
// charts, no scripts, fonts or images from anywhere). A summary a reviewer
// reads in one screen comes first (verdicts, and the four questions to ask
// of a limiter answered for the run), with a navigation to every
// scenario; then per scenario its verdict, thresholds with the bounds they
// held, notes, charts (faults and unplanned outages shaded on the time
// charts) and every figure.
func HTML(w io.Writer, r *Report) error {
	title := "rlctl verify report"
	if r.Suite != "" {
		title += ": " + r.Suite
	}
	p := page{bufio.NewWriter(w)}
	p.f("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"+
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"+
		"<title>%v</title>\n<style>\n%v</style>\n</head>\n<body>\n<div class=\"layout\">\n", title, markup(htmlStyle))
	p.nav(r)
	p.f("<main>\n")
	p.summary(r, title)
	for i := range r.Scenarios {
		p.scenario(r, i)
	}
	p.f("\n</main>\n</div>\n</body>\n</html>\n")
	if err := p.w.Flush(); err != nil {
		return fmt.Errorf("write report.html: %w", err)
	}
	return nil
}

// nav is the side navigation: every scenario with a dot of its verdict's
// colour.
func (p page) nav(r *Report) {
	p.f("<nav class=\"scenarios\" aria-label=\"Scenarios\">\n<h2><a href=\"#summary\">Summary</a></h2>\n<ol>")
	for _, sc := range r.Scenarios {
		p.f("\n<li><a href=\"#%v\" title=\"%v · %v\"><span class=\"dot %v\"></span>%v</a></li>",
			anchor(sc.Name), upper(sc.Status), sc.Verdict, verdictClass(sc), sc.Name)
	}
	p.f("\n</ol>\n</nav>\n")
}

// summary is what a reviewer reads in one screen: the run's status, a
// table of verdicts, and the four questions answered.
func (p page) summary(r *Report, title string) {
	n := "scenarios"
	if len(r.Scenarios) == 1 {
		n = "scenario"
	}
	verdicts := ""
	if len(r.Verdicts) > 0 {
		verdicts = ": " + strings.Join(r.Verdicts, ", ")
	}
	p.f("<header id=\"summary\" class=\"summary\">\n<h1>%v</h1>\n"+
		"<p class=\"overall\"><span class=\"status %v\" id=\"overall-status\">%v</span>\n"+
		"%v %v%v · started %v · took %v</p>\n",
		title, r.Status, upper(r.Status), len(r.Scenarios), n, verdicts,
		r.Started.UTC().Format(time.RFC3339), durationMs(r.DurationMs))
	if r.Reason != "" {
		p.f("<p class=\"error-box\" id=\"reason\">%v</p>", r.Reason)
	}
	p.f("\n")
	if r.Status == score.StatusIncomplete {
		p.f("<p class=\"error-box\" id=\"incomplete\">Incomplete: the run was interrupted; the figures cover only what ran.</p>")
	}
	p.f("\n<div class=\"summary-grid\">\n<div>\n<table class=\"verdicts\">\n" +
		"<thead><tr><th>scenario</th><th>result</th><th class=\"n\">ceiling</th><th class=\"n\">ratio</th><th class=\"n\">errors</th></tr></thead>\n<tbody>")
	flaws := false
	for _, sc := range r.Scenarios {
		flaws = flaws || sc.Flaw()
		p.f("\n<tr><td class=\"name\"><a href=\"#%v\" title=\"%v\">%v</a></td>"+
			"<td><span class=\"status %v\">%v</span> <span class=\"verdict %v\">%v</span></td>\n"+
			"<td class=\"n\">%v</td><td class=\"n\">%v</td><td class=\"n\">%v</td></tr>",
			anchor(sc.Name), sc.Design.LongLabel(), sc.Name, badgeClass(sc), upper(sc.Status), verdictClass(sc), sc.Verdict,
			ceilingCell(sc.Metrics), ratioCell(sc.Metrics), errorsCell(sc.Metrics))
	}
	p.f("\n</tbody>\n</table>\n")
	if flaws {
		p.f("<p class=\"legend-note\"><span class=\"verdict flaw\">flaw demonstrated</span>: the scenario exists to show a flaw (<code>shows: flaw</code>), " +
			"and its PASS means the run reproduced it: the design it ran is not safe as configured. " +
			"<span class=\"verdict holds\">design holds</span>: the design kept every promise the scenario checks.</p>")
	}
	p.f("\n</div>\n<div class=\"questions\" id=\"questions\">")
	for _, q := range Questions(r) {
		p.f("\n<div class=\"question\" id=\"q-%v\">\n<h3>%v</h3>\n<p>%v</p>", q.ID, q.Ask, q.Answer)
		if len(q.Evidence) > 0 {
			p.f("\n<ul>")
			for _, ev := range q.Evidence {
				class := markup("")
				if ev.Bad {
					class = ` class="bad"`
				}
				p.f("<li%v><a href=\"#%v\">%v</a>: %v</li>", class, anchor(ev.Scenario), ev.Scenario, ev.Text)
			}
			p.f("\n</ul>")
		}
		if q.More > 0 {
			p.f("<p class=\"legend-note\">and %v more in the table</p>", q.More)
		}
		p.f("\n</div>")
	}
	p.f("\n</div>\n</div>\n</header>\n")
}

// scenario is the section of r's scenario i: its verdict, thresholds,
// notes, charts, failover table and every figure.
func (p page) scenario(r *Report, i int) {
	sc := r.Scenarios[i]
	id := anchor(sc.Name)
	p.f("\n<section class=\"scenario\" id=\"%v\">\n<h2>%v <span class=\"status %v\">%v</span> <span class=\"verdict %v\">%v</span></h2>\n<p class=\"jump\">",
		id, sc.Name, badgeClass(sc), upper(sc.Status), verdictClass(sc), sc.Verdict)
	if i > 0 {
		p.f("<a href=\"#%v\">← previous</a> · ", anchor(r.Scenarios[i-1].Name))
	}
	p.f("<a href=\"#summary\">summary</a>")
	if i+1 < len(r.Scenarios) {
		p.f(" · <a href=\"#%v\">next →</a>", anchor(r.Scenarios[i+1].Name))
	}
	p.f("</p>\n<p class=\"meta\">")
	if d := sc.Design.LongLabel(); d != "" {
		p.f("Design: %v · ", d)
	}
	if sc.Target != "" {
		p.f("target: %v · ", sc.Target)
	}
	p.f("published limit: %v per identity", sc.Limit)
	var faults []string
	for _, f := range sc.Faults {
		faults = append(faults, f.Describe())
	}
	if len(faults) > 0 {
		p.f(" · faults: %v", strings.Join(faults, "; "))
	}
	p.f("</p>\n")
	if sc.Description != "" {
		p.f("<p>%v</p>", sc.Description)
	}
	p.f("\n")
	switch {
	case sc.Status == score.StatusSkipped:
		p.f("<p class=\"skipped\" id=\"skipped-%v\">Skipped: %v</p>", id, sc.Error)
	case sc.Error != "":
		p.f("<p class=\"error-box\">Error%v: %v</p>", sc.AgainNote(), sc.Error)
	}
	p.f("\n<div class=\"facts\">\n<div>\n")
	if len(sc.Thresholds) > 0 {
		p.thresholds(sc.Thresholds)
	}
	p.f("\n</div>\n<div>")
	if len(sc.Notes) > 0 {
		p.f("<ul class=\"notes\">")
		for _, n := range sc.Notes {
			p.f("<li>%v</li>", n)
		}
		p.f("</ul>")
	}
	p.f("</div>\n</div>\n")
	if charts := scenarioCharts(sc); len(charts) > 0 {
		p.f("<div class=\"charts\">")
		for _, c := range charts {
			p.f("\n<figure class=\"chart\" data-chart=\"%v\" id=\"%v\"><h3 class=\"chart-title\">%v</h3>%v<figcaption>%v</figcaption></figure>",
				c.Kind, c.ID, c.Title, c.SVG, c.Caption)
		}
		p.f("\n</div>")
	}
	p.f("\n")
	if sc.Failover != nil {
		p.failover(id, sc.Failover)
	}
	p.f("\n")
	if names := orderedMetrics(sc.Metrics); len(names) > 0 {
		p.f("\n<details class=\"figures\"><summary>All %v figures</summary>\n<table class=\"metrics\">\n"+
			"<thead><tr><th>metric</th><th class=\"n\">value</th></tr></thead>\n<tbody>", len(names))
		for _, name := range names {
			p.f("\n<tr><td>%v</td><td class=\"n\">%v</td></tr>", name, metricCell(sc.Metrics, name))
		}
		p.f("\n</tbody>\n</table>\n</details>\n")
	}
	p.f("\n</section>\n")
}

// thresholds is a scenario's thresholds, each with its status, the figure
// it saw and the bound it held to.
func (p page) thresholds(ts []score.Threshold) {
	p.f("\n<table class=\"thresholds\">\n" +
		"<thead><tr><th>threshold</th><th>status</th><th class=\"n\">observed</th><th class=\"n\">bound</th></tr></thead>\n<tbody>")
	for _, t := range ts {
		p.f("\n<tr><td><code>%v</code>", t.Expr)
		if t.Default {
			p.f(" <span class=\"default-claim\">(the default claim: no thresholds given)</span>")
		}
		observed := t.Error
		if observed == "" {
			observed = observedCell(t)
		}
		bound := boundCell(t)
		if bound == "" {
			bound = "–"
		}
		p.f("</td><td><span class=\"status %v\">%v</span></td><td class=\"n\">%v</td><td class=\"n\">%v</td></tr>",
			t.Status, upper(t.Status), observed, bound)
	}
	p.f("\n</tbody>\n</table>\n")
}

// failover is a failover's table, part by part: each endpoint, each
// Cluster shard and the worst identities.
func (p page) failover(id string, f *Failover) {
	p.f("\n<div class=\"wide\">\n<table class=\"failover\" id=\"failover-%v\">\n<caption>The failover, part by part: each endpoint's requests", id)
	if len(f.Shards) > 0 {
		p.f(", the identities on each Cluster shard")
	}
	if len(f.Identities) > 0 {
		p.f(", and the worst identities")
		if more := f.MoreIdentities(); more > 0 {
			p.f(" (%v more in report.json)", more)
		}
	}
	p.f(".</caption>\n<thead><tr><th>part</th>")
	for _, c := range FailoverColumns {
		p.f("<th class=\"n\">%v</th>", wbr(c))
	}
	p.f("</tr></thead>\n<tbody>")
	for _, row := range f.rows() {
		p.f("\n<tr><td>%v</td>", row.label)
		for _, c := range FailoverColumns {
			p.f("<td class=\"n\">%v</td>", metricCell(row.metrics, c))
		}
		p.f("</tr>")
	}
	p.f("\n</tbody>\n</table>\n</div>\n")
}
