package verify

import (
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/score"
)

// TestGatewayDownForComesBack: a gateway-down fault with for brings the
// gateway back once for has passed. Through the killed gateway, requests
// sent while it was down got no answer, and those sent after it came back
// are decided by Redis again; the run is judged, not an error blamed on
// Redis. The gateways wait 500ms on Redis, not the default 50ms: the
// restarted gateway's first calls dial and load the script, and on a busy
// machine they once ran past 50ms and failed open.
func TestGatewayDownForComesBack(t *testing.T) {
	t.Parallel()
	const gw = 1
	// 200/s against a limit of 150/s: the limit is reached, so the run's
	// cap is a measurement (score's pressed check).
	out := run(t, parse(t, `name: gateway-comes-back
limit: 150/1s
target:
  algorithm: redis-fixed-window
  gateways: 2
  redis: spawn
  timeout: 500ms
traffic: {rate: 200/s, duration: 3s, spread: round-robin}
faults:
  - {at: 1s, for: 1s, action: gateway-down, gateway: 1}
`))
	if out.Report.Status == score.StatusError {
		t.Fatalf("run is an error: %s", out.Report.Error)
	}
	h := out.History
	at, hold := appliedFault(t, h, "gateway-down")
	if hold <= 0 {
		t.Fatalf("gateway-down recorded as held for %v, want about 1s", hold)
	}
	// edge allows for the hook acting a little after the instant it
	// recorded, on a loaded machine.
	const edge = 50 * time.Millisecond
	var down, back int
	for i := range h.Len() {
		if h.Gateway(i) != gw {
			continue
		}
		sent, o := h.Sent(i), h.Outcome(i)
		switch {
		case sent >= at+edge && sent < at+hold-edge:
			down++
			if o != decision.Error {
				t.Errorf("request at %v through the downed gateway: %s, want error", sent, o)
			}
		case sent >= at+hold+edge:
			back++
			if (o != decision.Allowed && o != decision.Denied) || h.By(i) != decision.ByRedis {
				t.Errorf("request at %v, after the gateway came back: %s by %s, want decided by redis", sent, o, h.By(i))
			}
		}
	}
	if down == 0 || back == 0 {
		t.Fatalf("%d requests through gw %d while down, %d after: want both", down, gw, back)
	}
}
