package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/score"
)

// TestHTMLEscapesReportText puts markup, quotes and ampersands into every
// field of a report that reaches the page: each must come out as text,
// never as markup or a broken attribute.
func TestHTMLEscapesReportText(t *testing.T) {
	t.Parallel()
	var fields []string
	inj := func(field string) string {
		fields = append(fields, field)
		return `<i class="inj">` + field + `</i>"'&`
	}
	r := fixture()
	r.Suite, r.Reason = inj("suite"), inj("reason")
	sc := &r.Scenarios[0]
	sc.Name, sc.Description, sc.Target = inj("name"), inj("description"), inj("target")
	sc.Notes = append(sc.Notes, inj("note"))
	sc.Thresholds[0].Expr = inj("expr")
	sc.Design.Algorithm = inj("algorithm")
	sc.Faults[0].Action = inj("fault")
	sc.Result.PerGateway[0].Gateway = inj("gateway")
	sc.Failover = FailoverOf(&analysis.Result{
		PerEndpoint:         []analysis.EndpointResult{{Endpoint: inj("endpoint"), Metrics: analysis.Metrics{}}},
		PerShard:            []analysis.ShardResult{{Shard: inj("shard"), Metrics: analysis.Metrics{}}},
		PerIdentityFailover: []analysis.IdentityResult{{Identity: inj("identity"), Metrics: analysis.Metrics{}}},
	})
	r.Scenarios[1].Thresholds[2].Error = inj("threshold-error")
	r.Scenarios[2].Error = inj("error")
	r.Scenarios[3].Status, r.Scenarios[3].Error = score.StatusSkipped, inj("skipped")

	var buf bytes.Buffer
	if err := HTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if i := strings.Index(page, `<i class="inj">`); i >= 0 {
		t.Errorf("report text written as markup: %q", page[max(0, i-80):min(len(page), i+80)])
	}
	for _, f := range fields {
		want := `&lt;i class=&#34;inj&#34;&gt;` + f + `&lt;/i&gt;&#34;&#39;&amp;`
		if !strings.Contains(page, want) {
			t.Errorf("field %s: its text is missing or not escaped (want %s)", f, want)
		}
	}
}
