package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/verify"
	"github.com/rlctl/rlctl/internal/workload"
)

// k8sJobFile is the Kubernetes example README documents.
const k8sJobFile = "../../deploy/k8s/verify-job.yaml"

// k8sObject is what the test reads of a manifest: enough of Jobs,
// ConfigMaps and PersistentVolumeClaims.
type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
	Spec struct {
		CompletionMode string `yaml:"completionMode"`
		Completions    int    `yaml:"completions"`
		Parallelism    int    `yaml:"parallelism"`
		Template       struct {
			Spec struct {
				Containers []struct {
					Args []string `yaml:"args"`
					Env  []struct {
						Name  string `yaml:"name"`
						Value string `yaml:"value"`
					} `yaml:"env"`
					VolumeMounts []struct {
						Name      string `yaml:"name"`
						MountPath string `yaml:"mountPath"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
				Volumes []struct {
					Name      string `yaml:"name"`
					ConfigMap *struct {
						Name string `yaml:"name"`
					} `yaml:"configMap"`
					PersistentVolumeClaim *struct {
						ClaimName string `yaml:"claimName"`
					} `yaml:"persistentVolumeClaim"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// volumeAt says which ConfigMap or claim a container path lies on, and
// the path inside it: "claim:rlctl-reports", "segment-0".
func (o *k8sObject) volumeAt(t *testing.T, p string) (string, string) {
	t.Helper()
	ps := o.Spec.Template.Spec
	for _, m := range ps.Containers[0].VolumeMounts {
		rel, err := filepath.Rel(m.MountPath, p)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		for _, v := range ps.Volumes {
			switch {
			case v.Name != m.Name:
			case v.ConfigMap != nil:
				return "configmap:" + v.ConfigMap.Name, rel
			case v.PersistentVolumeClaim != nil:
				return "claim:" + v.PersistentVolumeClaim.ClaimName, rel
			}
		}
	}
	t.Fatalf("%s: %s is on no volume", o.Metadata.Name, p)
	return "", ""
}

// expand replaces $(NAME) as Kubernetes does in args: from the
// container's env, and JOB_COMPLETION_INDEX, which the Job controller
// sets.
func (o *k8sObject) expand(t *testing.T, args []string, index int) []string {
	t.Helper()
	env := map[string]string{"JOB_COMPLETION_INDEX": fmt.Sprint(index)}
	for _, e := range o.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = ref.ReplaceAllStringFunc(a, func(m string) string {
			v, ok := env[m[2:len(m)-1]]
			if !ok {
				t.Fatalf("%s: %s names no variable of the container", o.Metadata.Name, m)
			}
			return v
		})
	}
	return out
}

func readManifests(t *testing.T, file string) []*k8sObject {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var objs []*k8sObject
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		o := &k8sObject{}
		err := dec.Decode(o)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		objs = append(objs, o)
	}
}

// parseArgs parses a container's args as rlctl would: the command they
// name and its flags, which must all exist.
func parseArgs(t *testing.T, args []string) (string, []string, func(string) string) {
	t.Helper()
	f, _ := testFactory(io.Discard, nil)
	root := NewRootCmd(f)
	cmd, rest, err := root.Find(args)
	if err != nil || cmd == root {
		t.Fatalf("%q names no rlctl command: %v", args, err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("rlctl %s: %v", strings.Join(args, " "), err)
	}
	return cmd.CommandPath(), cmd.Flags().Args(), func(name string) string { return cmd.Flags().Lookup(name).Value.String() }
}

// The Kubernetes example runs as its comments and README say: one pod per
// segment of N, with N the Job's completions and parallelism, the same
// common start and Redis, each writing its run to its own directory of
// one volume; the merge Job reads exactly those directories from the same
// volume. Every flag exists in rlctl, and the scenario loads.
func TestKubernetesIndexedJobExample(t *testing.T) {
	t.Parallel()
	objs := readManifests(t, k8sJobFile)
	byKind := map[string][]*k8sObject{}
	for _, o := range objs {
		byKind[o.Kind] = append(byKind[o.Kind], o)
	}
	var verifyJob, mergeJob *k8sObject
	for _, j := range byKind["Job"] {
		if j.Spec.CompletionMode == "Indexed" {
			verifyJob = j
		} else {
			mergeJob = j
		}
	}
	if verifyJob == nil || mergeJob == nil {
		t.Fatalf("want an Indexed Job and a merge Job in %s", k8sJobFile)
	}
	if verifyJob.Metadata.Labels["step"] != "verify" || mergeJob.Metadata.Labels["step"] != "merge" {
		t.Fatalf("the README applies the jobs by their step labels: %v, %v", verifyJob.Metadata.Labels, mergeJob.Metadata.Labels)
	}
	n := verifyJob.Spec.Completions
	if n < 2 || verifyJob.Spec.Parallelism != n {
		t.Fatalf("completions %d, parallelism %d: every segment's pod must run at once", n, verifyJob.Spec.Parallelism)
	}

	var reportDirs []string
	var claim, startAt string
	covered := new(big.Rat)
	for i := range n {
		args := verifyJob.expand(t, verifyJob.Spec.Template.Spec.Containers[0].Args, i)
		name, pos, flag := parseArgs(t, args)
		if name != "rlctl verify" || len(pos) != 1 {
			t.Fatalf("pod %d runs %s %v; want rlctl verify SCENARIO", i, name, pos)
		}
		seg, err := workload.ParseSegment(flag("segment"))
		if err != nil {
			t.Fatalf("pod %d: --segment %q: %v", i, flag("segment"), err)
		}
		want, _ := workload.ParseSegment(fmt.Sprintf("%d/%d", i, n))
		if seg.String() != want.String() || seg.From.Cmp(covered) != 0 {
			t.Fatalf("pod %d sends segment %s; want %s, the next of %d", i, seg, want, n)
		}
		covered = seg.To
		at, err := time.Parse(time.RFC3339Nano, flag("start-at"))
		if err != nil {
			t.Fatalf("pod %d: --start-at %q: %v", i, flag("start-at"), err)
		}
		if startAt != "" && at.String() != startAt {
			t.Fatalf("pod %d starts at %v, pod 0 at %s: want one common start", i, at, startAt)
		}
		startAt = at.String()
		if flag("redis") == "" {
			t.Fatalf("pod %d names no Redis to read the shared clock from", i)
		}
		vol, dir := verifyJob.volumeAt(t, flag("report-dir"))
		if claim != "" && vol != claim || !strings.HasPrefix(vol, "claim:") || slices.Contains(reportDirs, dir) {
			t.Fatalf("pod %d writes to %s on %s: want its own directory of one shared claim", i, dir, vol)
		}
		claim = vol
		reportDirs = append(reportDirs, dir)

		// The scenario file is the ConfigMap's, and it loads.
		cm, key := verifyJob.volumeAt(t, pos[0])
		var body string
		for _, o := range byKind["ConfigMap"] {
			if "configmap:"+o.Metadata.Name == cm {
				body = o.Data[key]
			}
		}
		sc := filepath.Join(t.TempDir(), key)
		if err := os.WriteFile(sc, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := scenario.Load([]string{sc}, verify.Checks); err != nil {
			t.Fatalf("pod %d's scenario %s (%s): %v", i, pos[0], cm, err)
		}
	}
	if covered.Cmp(big.NewRat(1, 1)) != 0 {
		t.Fatalf("the segments cover up to %s of the plan, not all of it", covered.RatString())
	}

	name, pos, flag := parseArgs(t, mergeJob.expand(t, mergeJob.Spec.Template.Spec.Containers[0].Args, 0))
	if name != "rlctl report merge" || flag("out") == "" {
		t.Fatalf("the merge Job runs %s --out %q; want rlctl report merge ... --out DIR", name, flag("out"))
	}
	var merged []string
	for _, p := range pos {
		vol, dir := mergeJob.volumeAt(t, p)
		if vol != claim {
			t.Fatalf("the merge reads %s from %s; the pods wrote to %s", p, vol, claim)
		}
		merged = append(merged, path.Clean(dir))
	}
	slices.Sort(merged)
	slices.Sort(reportDirs)
	if !slices.Equal(merged, reportDirs) {
		t.Fatalf("the merge reads %v; the pods wrote %v", merged, reportDirs)
	}
	if len(byKind["PersistentVolumeClaim"]) != 1 || "claim:"+byKind["PersistentVolumeClaim"][0].Metadata.Name != claim {
		t.Fatalf("the file must create the claim %s the jobs share", claim)
	}
}
