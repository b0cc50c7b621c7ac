package cli

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/rate"
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
