package cli

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/report"
	"github.com/rlctl/rlctl/internal/scenario"
)

// TestVerifyFamilyArgvToOptions checks verify, ceiling, report and gateway
// turn argv into options, and reject bad argv with exit 2, without running.
func TestVerifyFamilyArgvToOptions(t *testing.T) {
	f, _ := testFactory(&syncBuffer{}, nil)
	t.Run("verify", func(t *testing.T) {
		var got *verifyOptions
		cmd := newCmdVerify(f, func(o *verifyOptions) error { got = o; return nil })
		cmd.SetArgs([]string{"a.yaml", "dir", "--run", "race|boundary", "--report-dir", "out", "--format", "json,junit"})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if len(got.Paths) != 2 || got.Run != "race|boundary" || got.ReportDir != "out" ||
			len(got.Formats) != 2 || got.Formats[1] != "junit" {
			t.Fatalf("%+v", got)
		}
	})
	t.Run("ceiling", func(t *testing.T) {
		var got *ceilingOptions
		cmd := newCmdCeiling(f, func(o *ceilingOptions) error { got = o; return nil })
		cmd.SetArgs([]string{"--limit", "100/1m", "--gateways", "50", "--algorithm", "leasing", "--lease", "20", "--clock-skew", "200ms"})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if got.Limit != (rate.Limit{Count: 100, Window: time.Minute}) || got.Gateways != 50 ||
			got.Algorithm != "leasing" || got.Lease != 20 || got.Skew != 200*time.Millisecond {
			t.Fatalf("%+v", got)
		}
	})
	t.Run("report merge", func(t *testing.T) {
		var got *reportOptions
		cmd := newCmdReport(f, func(o *reportOptions) error { got = o; return nil })
		cmd.SetArgs([]string{"merge", "a", "b", "--out", "m"})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if !got.Merge || len(got.Dirs) != 2 || got.Out != "m" {
			t.Fatalf("%+v", got)
		}
	})
	t.Run("gateway serve", func(t *testing.T) {
		var got *gatewayServeOptions
		cmd := newCmdGateway(f, func(o *gatewayServeOptions) error { got = o; return nil })
		cmd.SetArgs([]string{"serve", "--algorithm", "leasing", "--limit", "20/s", "--gateways", "3", "--listen", "127.0.0.1:0", "--on-error", "open"})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if got.Algorithm != "leasing" || got.Limit.Count != 20 || got.Gateways != 3 || got.OnError != "open" {
			t.Fatalf("%+v", got)
		}
		if got.Fields != "draft-11" || !slices.Equal(got.Endpoints, []string{"default"}) || !slices.Equal(got.Policies, []string{""}) {
			t.Fatalf("default header fields: %+v", got)
		}
	})
	t.Run("gateway serve fields and policies", func(t *testing.T) {
		var got *gatewayServeOptions
		cmd := newCmdGateway(f, func(o *gatewayServeOptions) error { got = o; return nil })
		cmd.SetArgs([]string{"serve", "--limit", "20/s", "--endpoint", "login=auth,feed", "--ratelimit-fields", "draft-06"})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if got.Fields != "draft-06" || !slices.Equal(got.Endpoints, []string{"login", "feed"}) || !slices.Equal(got.Policies, []string{"auth", ""}) {
			t.Fatalf("%+v", got)
		}
	})

	bad := []struct {
		name string
		args []string
		cmd  func() *cobra.Command
	}{
		{"verify bad regexp", []string{"--run", "("}, func() *cobra.Command {
			return newCmdVerify(f, func(*verifyOptions) error { return nil })
		}},
		{"verify bad format", []string{"--format", "pdf"}, func() *cobra.Command {
			return newCmdVerify(f, func(*verifyOptions) error { return nil })
		}},
		{"ceiling bad limit", []string{"--limit", "lots"}, func() *cobra.Command {
			return newCmdCeiling(f, func(*ceilingOptions) error { return nil })
		}},
		{"ceiling measure without algorithm", []string{"--limit", "5/s", "--measure"}, func() *cobra.Command {
			return newCmdCeiling(f, func(*ceilingOptions) error { return nil })
		}},
		{"gateway unknown algorithm", []string{"serve", "--limit", "5/s", "--algorithm", "magic"}, func() *cobra.Command {
			return newCmdGateway(f, func(*gatewayServeOptions) error { return nil })
		}},
		{"gateway bad listen", []string{"serve", "--limit", "5/s", "--listen", "nowhere"}, func() *cobra.Command {
			return newCmdGateway(f, func(*gatewayServeOptions) error { return nil })
		}},
		{"gateway unknown header fields", []string{"serve", "--limit", "5/s", "--ratelimit-fields", "draft-99"}, func() *cobra.Command {
			return newCmdGateway(f, func(*gatewayServeOptions) error { return nil })
		}},
		{"gateway policy name not ASCII", []string{"serve", "--limit", "5/s", "--endpoint", "login=caf\u00e9"}, func() *cobra.Command {
			return newCmdGateway(f, func(*gatewayServeOptions) error { return nil })
		}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cmd()
			c.SetArgs(tt.args)
			err := c.Execute()
			var coder exitcode.Coder
			if !errors.As(err, &coder) || coder.ExitCode() != exitcode.Usage {
				t.Fatalf("err %v; want a usage error (exit 2)", err)
			}
		})
	}
}

// A scenario's start line gives its whole description, wrapped and
// indented, says when it shows a flaw, and prints no dash when there is no
// description.
func TestVerifyStartLine(t *testing.T) {
	t.Parallel()
	long := "Ten gateways each keep their own fixed-window counter. Behind a round-robin balancer every gateway sees a tenth of one user's traffic and none refuses, so the published 20 per second becomes about 200."
	got := startLine(0, 15, &scenario.Scenario{Name: "local-counters-leak", Shows: design.ShowsFlaw, Description: long})
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if lines[0] != "[1/15] local-counters-leak (shows a flaw: it passes when the flaw appears)" {
		t.Errorf("first line %q", lines[0])
	}
	var desc []string
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "  ") || len([]rune(l)) > descriptionWidth+2 {
			t.Errorf("description line %q is not indented or is too long", l)
		}
		desc = append(desc, strings.TrimSpace(l))
	}
	if strings.Join(desc, " ") != long {
		t.Errorf("the description was cut or changed:\n%s", got)
	}
	if got := startLine(1, 2, &scenario.Scenario{Name: "bare", Shows: design.ShowsHolds}); got != "[2/2] bare\n" {
		t.Errorf("no description: %q, want the name alone", got)
	}
}

func TestVerifyReportLine(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("reports", "20261129T221946Z-builtin")
	if got := reportLine(dir, report.AllFormats); !strings.HasPrefix(got, "report: "+filepath.Join(dir, "report.html")+" ") {
		t.Errorf("with html: %q, want the page to open", got)
	}
	if got := reportLine(dir, []string{"json"}); got != "report: "+dir {
		t.Errorf("without html: %q, want the directory", got)
	}
}
