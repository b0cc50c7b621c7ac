package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/analysis"
	"github.com/rlctl/rlctl/internal/metric"
	"github.com/rlctl/rlctl/internal/score"
)

// failoverReport is one scenario whose failover figures were split by
// endpoint and by Cluster shard.
func failoverReport() *Report {
	res := &analysis.Result{
		PerEndpoint: []analysis.EndpointResult{{Endpoint: "login", Metrics: analysis.Metrics{metric.ElectionErrors: 7, metric.FailoverDenied: 0}}},
		PerShard: []analysis.ShardResult{
			{Shard: "127.0.0.1:7001", FailedOver: true, Identities: 1, Metrics: analysis.Metrics{metric.ElectionErrors: 5, metric.AfterFaultCeiling: 9}},
			{Shard: "127.0.0.1:7002", Identities: 3, Metrics: analysis.Metrics{metric.ElectionErrors: 0, metric.AfterFaultCeiling: 4}},
		},
	}
	// Twelve identities: u3 let the most through, u7 saw the most errors.
	for i := range 12 {
		m := analysis.Metrics{metric.ElectionErrors: 0, metric.AfterFaultCeiling: 2}
		switch i {
		case 3:
			m[metric.AfterFaultCeiling] = 6
		case 7:
			m[metric.ElectionErrors] = 4
		}
		res.PerIdentityFailover = append(res.PerIdentityFailover, analysis.IdentityResult{Identity: fmt.Sprintf("u%d", i), Metrics: m})
	}
	r := &Report{Scenarios: []Scenario{{Name: "shard-x", Status: score.StatusPass, Failover: FailoverOf(res), Metrics: map[string]float64{}}}}
	settle(r, false)
	return r
}

// TestFailoverTables checks that the per-endpoint and per-shard failover
// figures reach report.json, report.md and report.html, each row with its
// own figures.
func TestFailoverTables(t *testing.T) {
	t.Parallel()
	r := failoverReport()
	var js bytes.Buffer
	if err := JSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Scenarios []struct {
			Failover struct {
				Endpoints  []FailoverPart `json:"endpoints"`
				Shards     []FailoverPart `json:"shards"`
				Identities []FailoverPart `json:"identities"`
			} `json:"failover"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	f := back.Scenarios[0].Failover
	if len(f.Endpoints) != 1 || f.Endpoints[0].Name != "login" || f.Endpoints[0].Metrics[metric.ElectionErrors] != 7 {
		t.Errorf("report.json failover endpoints = %+v", f.Endpoints)
	}
	if len(f.Shards) != 2 || !f.Shards[0].FailedOver || f.Shards[1].FailedOver || f.Shards[1].Identities != 3 || f.Shards[0].Metrics[metric.AfterFaultCeiling] != 9 {
		t.Errorf("report.json failover shards = %+v", f.Shards)
	}

	if len(f.Identities) != 12 || f.Identities[3].Name != "u3" || f.Identities[3].Metrics[metric.AfterFaultCeiling] != 6 {
		t.Errorf("report.json failover identities = %+v, want all 12 in the run's order", f.Identities)
	}

	var md bytes.Buffer
	if err := Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| endpoint login | 7 |", "| shard 127.0.0.1:7001 (1 identity, failed over) | 5 |", "| shard 127.0.0.1:7002 (3 identities) | 0 |",
		"| shard 127.0.0.1:7002 (3 identities) | 0 | – | – | – | – | – | 4 | – | – |\n| identity u3 | 0 |", "| identity u7 | 4 |", "report.json lists 2 identities more"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md.String())
		}
	}
	if rows := strings.Count(md.String(), "| identity u"); rows != 10 {
		t.Errorf("report.md shows %d identities, want the 10 worst", rows)
	}

	var html bytes.Buffer
	if err := HTML(&html, r); err != nil {
		t.Fatal(err)
	}
	page := html.String()
	i := strings.Index(page, `<table class="failover" id="failover-shard-x">`)
	if i < 0 {
		t.Fatalf("report.html has no failover table")
	}
	table := page[i : i+strings.Index(page[i:], "</table>")]
	for _, want := range []string{
		`<tr><td>endpoint login</td><td class="n">7</td>`,
		`<tr><td>shard 127.0.0.1:7001 (1 identity, failed over)</td><td class="n">5</td>`,
		`<tr><td>shard 127.0.0.1:7002 (3 identities)</td><td class="n">0</td>`,
		`<tr><td>identity u3</td><td class="n">0</td>`,
		`<tr><td>identity u7</td><td class="n">4</td>`,
		"the worst identities (2 more in report.json)",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("report.html's failover table lacks %q:\n%s", want, table)
		}
	}
}
