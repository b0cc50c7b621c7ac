package scripttarget

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"testing/fstest"

	"github.com/rlctl/rlctl/internal/design"
	"github.com/rlctl/rlctl/internal/scenario"
)

// A redis-script target's section decodes its fields into its Config and
// reads the script relative to the scenario file.
func TestLoadScriptSection(t *testing.T) {
	t.Parallel()
	file := filepath.Join("..", "..", "scenario", "testdata", "script.yaml")
	scs, err := scenario.Load([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join("..", "..", "scenario", "testdata", "scripts", "limit.lua")
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	got := scs[0].Target
	want := scenario.Target{
		Kind: scenario.KindRedisScript, Gateways: 3, Redis: scenario.RedisEmbedded, Timeout: scenario.DefaultTimeout, Key: scenario.KeyIdentity,
		Endpoints: []scenario.Endpoint{{Name: "default", Share: 1, OnError: design.OnErrorOpen, OnFailover: design.OnFailoverTrust, Timeout: scenario.DefaultTimeout}},
		Config: &Config{
			Script: script, Source: string(src),
			Keys: []string{"rl:{id}"}, Args: []string{"{limit}", "{window_s}", "{now_ms}"}, Allowed: "== 1",
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("target\n got %#v\nwant %#v", got, want)
	}
	if !reflect.DeepEqual(ConfigOf(got), want.Config) {
		t.Errorf("config\n got %#v\nwant %#v", ConfigOf(got), want.Config)
	}
	if s := got.String(); s != "redis-script "+script+" ×3" {
		t.Errorf("described as %q", s)
	}
}

// In an fs.FS (the suite embedded in the binary) the script is read from
// beside the scenario too.
func TestScriptReadRelativeInFS(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"suite/one.yaml":  {Data: []byte("name: one\nlimit: 3/s\ntarget:\n  kind: redis-script\n  script: lua/x.lua\n  keys: [\"k:{id}\"]\n  allowed: \"> 0\"\ntraffic: {rate: 5/s}\n")},
		"suite/lua/x.lua": {Data: []byte("return 1")},
	}
	scs, err := scenario.LoadFS(fsys, "suite")
	if err != nil {
		t.Fatal(err)
	}
	if c := ConfigOf(scs[0].Target); c.Source != "return 1" || c.Script != "suite/lua/x.lua" {
		t.Errorf("script = %q %q, want it read relative to the scenario", c.Script, c.Source)
	}
	if _, err := scenario.LoadFS(fstest.MapFS{"suite/one.yaml": fsys["suite/one.yaml"]}, "suite"); err == nil {
		t.Error("a missing script loaded")
	}
}
