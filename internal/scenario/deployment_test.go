package scenario_test

import (
	"github.com/rlctl/rlctl/internal/scenario"
	"strings"
	"testing"
)

// What an http target says of its deployment's Redis is checked at load,
// each mistake naming its field: faults that act on the deployment need
// what they act on, and those rlctl never applies to a server it did not
// start are refused.
func TestDeploymentFieldsAtLoad(t *testing.T) {
	base := "name: d\nlimit: 10/1s\ntarget:\n  kind: http\n  urls: [http://127.0.0.1:1/]\n  identity: {header: X-API-Key}\n"
	for _, tt := range []struct{ name, extra, field string }{
		{"redis not a URL", "  redis: spawn\n", "target.redis"},
		{"schema without redis", "  schema: ulule-limiter\n", "target.schema"},
		{"pattern without {id}", "  redis: redis://127.0.0.1:1\n  pattern: ratelimit\n", "target.pattern"},
		{"schema and pattern", "  redis: redis://127.0.0.1:1\n  schema: ulule-limiter\n  pattern: x:{id}\n", "target.pattern"},
		{"toxiproxy without proxy", "  toxiproxy: {api: http://127.0.0.1:8474}\n", "target.toxiproxy"},
		{"failover without redis", "faults:\n  - {at: 1s, action: failover}\n", "faults[0].action"},
		{"failover on standalone", "  redis: redis://127.0.0.1:1\nfaults:\n  - {at: 1s, action: failover}\n", "faults[0].action"},
		{"reset without layout", "  redis: redis://127.0.0.1:1\nfaults:\n  - {at: 1s, action: redis-reset}\n", "faults[0].action"},
		{"down without toxiproxy", "faults:\n  - {at: 1s, for: 1s, action: redis-down}\n", "faults[0].action"},
		{"kill-primary", "  redis: redis+sentinel://127.0.0.1:1/m\nfaults:\n  - {at: 1s, action: kill-primary}\n", "faults[0].action"},
		{"stall without for", "  redis: redis://127.0.0.1:1\nfaults:\n  - {at: 1s, action: redis-stall}\n", "faults[0].for"},
		{"mode on another fault", "  redis: redis://127.0.0.1:1\n  schema: ulule-limiter\nfaults:\n  - {at: 1s, action: redis-reset, mode: all}\n", "faults[0].mode"},
	} {
		doc := base + tt.extra
		if strings.HasPrefix(tt.extra, "faults:") {
			doc = base + "traffic: {rate: 10/s, duration: 2s}\n" + tt.extra
		} else if strings.Contains(tt.extra, "faults:") {
			i := strings.Index(tt.extra, "faults:")
			doc = base + tt.extra[:i] + "traffic: {rate: 10/s, duration: 2s}\n" + tt.extra[i:]
		}
		_, err := scenario.Parse([]byte(doc), "d.yaml")
		if err == nil || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%s: %v; want an error naming %s", tt.name, err, tt.field)
		}
	}
	ok := base + "  redis: redis+sentinel://127.0.0.1:26379/mymaster\n  schema: ulule-limiter\n  toxiproxy: {api: http://127.0.0.1:8474, proxy: redis}\ntraffic: {rate: 10/s, duration: 3s}\nfaults:\n  - {at: 1s, action: failover}\n  - {at: 2s, for: 200ms, action: redis-stall, mode: all}\n  - {at: 2500ms, for: 200ms, action: redis-down}\n"
	if _, err := scenario.Parse([]byte(ok), "d.yaml"); err != nil {
		t.Errorf("a deployment with every fault: %v", err)
	}
}
