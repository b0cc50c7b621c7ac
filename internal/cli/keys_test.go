package cli

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/redistest"
)

// TestKeysArgvToOptions checks each command turns argv into options (and
// rejects bad argv with exit 2) without running anything.
func TestKeysArgvToOptions(t *testing.T) {
	f, _ := testFactory(&syncBuffer{}, nil)
	t.Run("inspect", func(t *testing.T) {
		var got *keysInspectOptions
		cmd := newCmdKeysInspect(f, func(o *keysInspectOptions) error { got = o; return nil })
		cmd.SetArgs([]string{"alice", "--schema", "redis-gcra", "--limit", "10/s", "--burst", "20"})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if got.Arg != "alice" || got.Schemas.Schema != "redis-gcra" || got.Schemas.Limit != "10/s" || got.Schemas.Burst != 20 {
			t.Fatalf("%+v", got)
		}
	})
	t.Run("reset", func(t *testing.T) {
		var got *keysResetOptions
		cmd := newCmdKeysReset(f, func(o *keysResetOptions) error { got = o; return nil })
		cmd.SetArgs([]string{"bob", "--yes", "--dry-run"})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if got.Arg != "bob" || !got.Yes || !got.DryRun {
			t.Fatalf("%+v", got)
		}
	})
	t.Run("repair-ttl", func(t *testing.T) {
		var got *keysRepairTTLOptions
		cmd := newCmdKeysRepairTTL(f, func(o *keysRepairTTLOptions) error { got = o; return nil })
		cmd.SetArgs([]string{"--match", "x:*", "--ttl", "90s", "--max-rate", "500", "--yes"})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if got.Match != "x:*" || got.TTL != 90*time.Second || got.MaxRate != 500 || !got.Yes {
			t.Fatalf("%+v", got)
		}
	})
	t.Run("audit", func(t *testing.T) {
		var got *auditOptions
		cmd := newCmdAudit(f, func(o *auditOptions) error { got = o; return nil })
		cmd.SetArgs([]string{"--published", "100/1m", "--gateways", "50", "--algorithm", "leasing", "--lease", "5"})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if got.Published != "100/1m" || got.Gateways != 50 || got.Algorithm != "leasing" || got.Lease != 5 {
			t.Fatalf("%+v", got)
		}
	})
	bad := []struct {
		name string
		args []string
	}{
		{"repair negative rate", []string{"keys", "repair-ttl", "--max-rate", "-1", "--yes"}},
		{"reset empty", []string{"keys", "reset", "", "--yes"}},
		{"reset blank", []string{"keys", "reset", " \t", "--yes"}},
		{"inspect empty", []string{"keys", "inspect", ""}},
		{"repair empty match", []string{"keys", "repair-ttl", "--match", "", "--limit", "1/s", "--yes"}},
		{"repair blank match", []string{"keys", "repair-ttl", "--match", "  ", "--limit", "1/s", "--yes"}},
		{"repair empty schema", []string{"keys", "repair-ttl", "--schema", "", "--limit", "1/s", "--yes"}},
		{"reset empty pattern", []string{"keys", "reset", "alice", "--pattern", "", "--yes"}},
		{"inspect empty limit", []string{"keys", "inspect", "alice", "--limit", ""}},
		{"inspect empty prefix", []string{"keys", "inspect", "alice", "--schema", "ulule-limiter", "--prefix", ""}},
		{"audit empty schema", []string{"audit", "--schema", ""}},
		{"audit empty published", []string{"audit", "--published", "", "--algorithm", ""}},
		{"audit empty config", []string{"audit", "--config", ""}},
		{"inspect two args", []string{"keys", "inspect", "a", "b"}},
		{"audit unknown algorithm", []string{"audit", "--algorithm", "x", "--published", "1/s"}},
		{"audit bad published", []string{"audit", "--algorithm", "leasing", "--published", "x"}},
		{"audit unknown schema", []string{"audit", "--schema", "x"}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			f, errOut := testFactory(&syncBuffer{}, nil)
			args := append(tt.args, "--redis", "redis://127.0.0.1:1")
			if code := Run(f, args, nil, noExit(t)); code != int(exitcode.Usage) {
				t.Fatalf("exit %d, want 2: %s", code, errOut)
			}
		})
	}
}

// TestKeysResetAsksOnATerminal: on a terminal the answer decides.
func TestKeysResetAsksOnATerminal(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	for _, answer := range []string{"n\n", "", "yes\n"} {
		t.Run(strings.TrimSpace(answer), func(t *testing.T) {
			c.Set(ctx, "rl:fw:{alice}", 1, time.Minute)
			out := &syncBuffer{}
			f, errOut := testFactory(out, nil)
			f.IO.In, f.IO.InTTY = strings.NewReader(answer), true
			if code := Run(f, []string{"keys", "reset", "alice", "--redis", srv.URL()}, nil, noExit(t)); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if !strings.Contains(errOut.String(), "Delete 1 key? [y/N]") {
				t.Errorf("no question asked: %q", errOut)
			}
			exists := c.Exists(ctx, "rl:fw:{alice}").Val()
			if answer == "yes\n" {
				if exists != 0 || !strings.Contains(out.String(), "deleted 1 key of") {
					t.Errorf("confirmed but exists=%d out=%q", exists, out)
				}
			} else if exists != 1 || !strings.Contains(out.String(), "not confirmed") {
				t.Errorf("declined but exists=%d out=%q", exists, out)
			}
		})
	}
}

// TestKeysRepairTTLAsksAfterADryPass: on a terminal the count comes first
// (nothing changed), then the question.
func TestKeysRepairTTLAsksAfterADryPass(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	c.Set(ctx, "rl:fw:{a}", 1, 0)
	for _, answer := range []string{"n\n", "y\n"} {
		out := &syncBuffer{}
		f, errOut := testFactory(out, nil)
		f.IO.In, f.IO.InTTY = strings.NewReader(answer), true
		if code := Run(f, []string{"keys", "repair-ttl", "--limit", "10/1m", "-o", "json", "--redis", srv.URL()}, nil, noExit(t)); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if !strings.Contains(errOut.String(), "1 of them without TTL (dry run: nothing changed)") ||
			!strings.Contains(errOut.String(), "Set a TTL on 1 key (") {
			t.Fatalf("stderr %q", errOut)
		}
		ttl := c.PTTL(ctx, "rl:fw:{a}").Val()
		if answer == "n\n" && ttl != -1 {
			t.Fatalf("declined but TTL %v", ttl)
		}
		if answer == "y\n" {
			var st keyspace.RepairStats
			if err := json.Unmarshal([]byte(out.String()), &st); err != nil {
				t.Fatalf("%v: %q", err, out)
			}
			if st.Repaired != 1 || ttl <= 0 {
				t.Fatalf("stats %+v ttl %v", st, ttl)
			}
		}
	}
}

// TestAuditJSONIsStable decodes audit's JSON into the documented shape.
func TestAuditJSONIsStable(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	c.Set(context.Background(), "rl:gi:{a}", 1, 0)
	out := &syncBuffer{}
	f, errOut := testFactory(out, nil)
	code := Run(f, []string{"audit", "--refresh-interval", "100ms", "-o", "json", "--redis", srv.URL()}, nil, noExit(t))
	if code != int(exitcode.Failed) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Failed   bool `json:"failed"`
		Findings []struct {
			Check    string   `json:"check"`
			Severity string   `json:"severity"`
			Message  string   `json:"message"`
			Sample   []string `json:"sample"`
		} `json:"findings"`
		Scanned     int64            `json:"scanned"`
		LimiterKeys map[string]int64 `json:"limiter_keys"`
		Latency     struct {
			P99 *float64 `json:"p99_ms"`
		} `json:"latency"`
	}
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !rep.Failed || rep.Scanned != 1 || rep.LimiterKeys["redis-get-incr"] != 1 || rep.Latency.P99 == nil {
		t.Fatalf("%+v", rep)
	}
	found := false
	for _, fd := range rep.Findings {
		if fd.Check == keyspace.CheckNoTTL {
			found = fd.Severity == "fail" && len(fd.Sample) == 1 && fd.Sample[0] == "rl:gi:{a}"
		}
	}
	if !found {
		t.Errorf("no-ttl finding missing: %+v", rep.Findings)
	}
}

// TestKeysRepairTTLProgress: a bar on a terminal, nothing extra off one
// with --no-progress; the summary is the same either way.
func TestKeysRepairTTLProgress(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	for _, tty := range []bool{true, false} {
		c.Set(ctx, "rl:fw:{a}", 1, 0)
		out := &syncBuffer{}
		f, errOut := testFactory(out, nil)
		f.IO.ErrTTY = tty
		args := []string{"keys", "repair-ttl", "--limit", "10/1m", "--yes", "--redis", srv.URL()}
		if !tty {
			args = append(args, "--no-progress")
		}
		if code := Run(f, args, nil, noExit(t)); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if !strings.Contains(out.String(), "1 of them without TTL\n1 repaired") {
			t.Errorf("tty=%v: summary %q", tty, out)
		}
		if tty != strings.Contains(errOut.String(), "repair-ttl ") {
			t.Errorf("tty=%v: stderr %q", tty, errOut)
		}
	}
}

// TestKeysEmptyArgumentsTouchNothing: an empty or blank identity, key or
// flag value is invalid usage (exit 2) with a clear message, on a real
// Redis holding limiter keys that such a run could have reached.
func TestKeysEmptyArgumentsTouchNothing(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	for _, k := range []string{"rl:fw:{}", "rl:gi:{ }", "ratelimit:r:s:x:1700000000000:minute", "d_k__1700000000"} {
		if err := c.Set(ctx, k, 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	snap := redistest.TakeSnapshot(t, c, "rl:fw:{}", "rl:gi:{ }", "ratelimit:r:s:x:1700000000000:minute", "d_k__1700000000")
	for _, args := range [][]string{
		{"keys", "reset", "", "--yes"},
		{"keys", "reset", " ", "--yes", "--limit", "1/s"},
		{"keys", "inspect", ""},
		{"keys", "repair-ttl", "--match", "", "--ttl", "1m", "--yes", "--force"},
		{"keys", "repair-ttl", "--schema", " ", "--ttl", "1m", "--yes"},
		{"keys", "reset", "alice", "--yes", "--redis", ""},
		{"audit", "--limit", ""},
	} {
		f, errOut := testFactory(&syncBuffer{}, nil)
		if !slices.Contains(args, "--redis") {
			args = append(args, "--redis", srv.URL())
		}
		code := Run(f, args, nil, noExit(t))
		if code != int(exitcode.Usage) || !strings.Contains(errOut.String(), "must not be empty") {
			t.Errorf("rlctl %q: exit %d, want 2 saying what must not be empty: %s", args, code, errOut)
		}
	}
	snap.AssertUnchanged(t, c)
}
