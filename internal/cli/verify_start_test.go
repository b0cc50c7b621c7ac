package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/exitcode"
)

// TestVerifyStartWithinADay: --start-at or --start-after more than a day
// away is refused before anything runs (exit 2, naming the limit), as a
// start years ahead would wait forever; a start within the day is taken.
func TestVerifyStartWithinADay(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		args []string
		ok   bool
	}{
		{"year 9999", []string{"--start-at", "9999-12-31T23:59:59Z"}, false},
		{"a day and a second", []string{"--start-at", "2026-12-01T12:00:01Z"}, false},
		{"after 25h", []string{"--start-after", "25h"}, false},
		{"a day", []string{"--start-at", "2026-12-01T12:00:00Z"}, true},
		{"after 2m", []string{"--start-after", "2m"}, true},
		{"in the past", []string{"--start-at", "2026-11-30T11:00:00Z"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, _ := testFactory(&syncBuffer{}, nil)
			f.Now = func() time.Time { return now }
			ran := false
			cmd := newCmdVerify(f, func(*verifyOptions) error { ran = true; return nil })
			cmd.SetArgs(append([]string{"a.yaml"}, tc.args...))
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			err := cmd.Execute()
			if tc.ok {
				if err != nil || !ran {
					t.Fatalf("%v: %v, ran %v; want it taken", tc.args, err, ran)
				}
				return
			}
			if err == nil || ran {
				t.Fatalf("%v: taken (ran %v); want it refused", tc.args, ran)
			}
			if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "further from now than the limit of 24h") {
				t.Fatalf("%v: %v (exit %d); want exit 2 naming the 24h limit", tc.args, err, exitcode.Of(err))
			}
		})
	}
}
