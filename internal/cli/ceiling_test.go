package cli

import (
	"encoding/json"
	"testing"
)

// --measure puts a short simulated run beside the theory: a fixed window
// measured under overload and a boundary burst admits more than L in some
// window, and never more than the theory's 2L.
func TestCeilingMeasureWithinTheory(t *testing.T) {
	out := &syncBuffer{}
	f, errOut := testFactory(out, nil)
	code := Run(f, []string{"ceiling", "--limit", "10/1s", "--gateways", "3", "--algorithm", "redis-fixed-window",
		"--measure", "--measure-duration", "2s", "-o", "json"}, nil, noExit(t))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res struct {
		Designs []struct {
			Design  string  `json:"algorithm"`
			Ceiling float64 `json:"ceiling"`
		} `json:"designs"`
		Measured *struct {
			Ceiling float64 `json:"ceiling"`
		} `json:"measured"`
	}
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Measured == nil || len(res.Designs) != 1 {
		t.Fatalf("want one theory and a measurement: %s", out)
	}
	if m, th := res.Measured.Ceiling, res.Designs[0].Ceiling; m <= 10 || m > th {
		t.Errorf("measured ceiling %g; want above L = 10 and at most the theory's %g", m, th)
	}
}
