package measure

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/report"
	"github.com/rlctl/rlctl/internal/score"
	"github.com/rlctl/rlctl/internal/verify"
)

// A boundary run that fired no shot, and failed for that alone, is the one
// the measurement skips, saying so; a run with a shot, another failure or
// other traffic is not.
func TestNoShot(t *testing.T) {
	t.Parallel()
	outcome := func(span time.Duration, shots []time.Duration, failed ...string) *verify.Outcome {
		h := history.New(history.Meta{BoundarySpan: span, Boundaries: shots}, 0)
		var checks []score.CheckResult
		for _, name := range failed {
			checks = append(checks, score.CheckResult{Name: name})
		}
		return &verify.Outcome{History: h, Report: report.Scenario{Validity: append(checks, score.CheckResult{Name: "complete", Held: true})}}
	}
	span := 50 * time.Millisecond
	for _, tt := range []struct {
		name string
		out  *verify.Outcome
		want bool
	}{
		{"no shot", outcome(span, nil, "straddled"), true},
		{"a shot", outcome(span, []time.Duration{time.Second}), false},
		{"no shot and no answer", outcome(span, nil, "straddled", "answered"), false},
		{"constant traffic", outcome(0, nil), false},
		{"not run", &verify.Outcome{}, false},
	} {
		if got := noShot(tt.out); got != tt.want {
			t.Errorf("%s: noShot %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A run refused for rlctl's own slowness says the machine was too busy
// before its reason, keeping the reason's exit code; any other refusal is
// its reason alone.
func TestRefusedSaysWhenTheMachineWasTooBusy(t *testing.T) {
	why := exitcode.With(errors.New("measure-constant: the embedded Redis did not decide in time"), exitcode.Failed)
	busy := &verify.Outcome{Report: report.Scenario{Validity: []score.CheckResult{{Name: "decided", Reason: "slow", Busy: true}}}}
	err := refused(busy, why)
	if !strings.HasPrefix(err.Error(), "this machine was too busy for rlctl to measure") || !errors.Is(err, why) || exitcode.Of(err) != exitcode.Failed {
		t.Errorf("busy: %v (exit %d)", err, exitcode.Of(err))
	}
	down := &verify.Outcome{Report: report.Scenario{Validity: []score.CheckResult{{Name: "answered", Reason: "nothing answered"}}}}
	for _, out := range []*verify.Outcome{down, nil} {
		if err := refused(out, why); err != why {
			t.Errorf("not busy: %v, want the reason alone", err)
		}
	}
}
