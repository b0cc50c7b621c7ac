package cli

import (
	"encoding/json"
	"strings"
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

// Numbers that make no sense negative or zero are invalid usage, named.
func TestCeilingRefusesNonsenseNumbers(t *testing.T) {
	for _, bad := range [][]string{
		{"--lease", "-5"}, {"--capacity", "-1"}, {"--clock-skew", "-1s"},
		{"--gateways", "0"}, {"--gateways", "-3"}, {"--measure-duration", "-2s"},
	} {
		f, errOut := testFactory(&syncBuffer{}, nil)
		args := append([]string{"ceiling", "--limit", "100/1m", "--algorithm", "leasing"}, bad...)
		if code := Run(f, args, nil, noExit(t)); code != 2 || !strings.Contains(errOut.String(), bad[0]) {
			t.Errorf("%v: exit %d, %q; want 2 naming %s", bad, code, errOut, bad[0])
		}
	}
}
