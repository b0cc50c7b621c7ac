package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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
	"github.com/rlctl/rlctl/internal/workload"
)

// The Kubernetes examples README documents: one on a ReadWriteMany
// volume, one with a ReadWriteOnce volume per segment.
const (
	k8sJobFile = "../../deploy/k8s/verify-job.yaml"
	k8sRWOFile = "../../deploy/k8s/verify-jobs-rwo.yaml"
)

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
		AccessModes    []string `yaml:"accessModes"`
		CompletionMode string   `yaml:"completionMode"`
		Completions    int      `yaml:"completions"`
		Parallelism    int      `yaml:"parallelism"`
		Template       struct {
			Spec struct {
				Containers []struct {
					Args []string `yaml:"args"`
					Env  []struct {
						Name      string `yaml:"name"`
						Value     string `yaml:"value"`
						ValueFrom *struct {
							FieldRef *struct {
								FieldPath string `yaml:"fieldPath"`
							} `yaml:"fieldRef"`
						} `yaml:"valueFrom"`
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
// container's env (pod stands for the pod's name, from the downward API),
// and JOB_COMPLETION_INDEX, which the Job controller sets.
func (o *k8sObject) expand(t *testing.T, args []string, index int, pod string) []string {
	t.Helper()
	env := map[string]string{"JOB_COMPLETION_INDEX": fmt.Sprint(index)}
	for _, e := range o.Spec.Template.Spec.Containers[0].Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = pod
		default:
			t.Fatalf("%s: env %s comes from something the test does not know", o.Metadata.Name, e.Name)
		}
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

// The Kubernetes examples run as their comments and README say: one pod
// per segment of N (an Indexed Job's completions and parallelism, or a
// Job per segment), the same common start and Redis, each writing its run
// to its own directory, on a volume no other pod writes at the same time
// unless it is ReadWriteMany; the merge Job reads exactly those
// directories from the same volumes, into a fresh path (report merge
// never writes into one that exists) on a volume of the file. Every flag
// exists in rlctl, and the scenario loads.
func TestKubernetesExamples(t *testing.T) {
	t.Parallel()
	for _, file := range []string{k8sJobFile, k8sRWOFile} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			checkKubernetesRun(t, file)
		})
	}
}

// k8sPod is one pod of a verify Job: the Job and its completion index.
type k8sPod struct {
	job   *k8sObject
	index int
}

func checkKubernetesRun(t *testing.T, file string) {
	objs := readManifests(t, file)
	byKind := map[string][]*k8sObject{}
	for _, o := range objs {
		byKind[o.Kind] = append(byKind[o.Kind], o)
	}
	claims := map[string]*k8sObject{}
	for _, c := range byKind["PersistentVolumeClaim"] {
		claims["claim:"+c.Metadata.Name] = c
	}
	var pods []k8sPod
	var mergeJob *k8sObject
	for _, j := range byKind["Job"] {
		switch j.Metadata.Labels["step"] {
		case "verify":
			n := 1
			if j.Spec.CompletionMode == "Indexed" {
				n = j.Spec.Completions
				if n < 2 || j.Spec.Parallelism != n {
					t.Fatalf("%s: completions %d, parallelism %d: every segment's pod must run at once", j.Metadata.Name, n, j.Spec.Parallelism)
				}
			}
			for i := range n {
				pods = append(pods, k8sPod{j, i})
			}
		case "merge":
			if mergeJob != nil {
				t.Fatal("two merge Jobs")
			}
			mergeJob = j
		default:
			t.Fatalf("%s: the README applies the jobs by their step labels: %v", j.Metadata.Name, j.Metadata.Labels)
		}
	}
	if len(pods) < 2 || mergeJob == nil {
		t.Fatalf("want verify pods (%d) and a merge Job in %s", len(pods), file)
	}

	type place struct{ vol, dir string }
	var wrote []place
	writers := map[string]int{}
	var startAt string
	var segs []workload.Segment
	for _, p := range pods {
		name, pos, flag := parseArgs(t, p.job.expand(t, p.job.Spec.Template.Spec.Containers[0].Args, p.index, p.job.Metadata.Name+"-pod"))
		if name != "rlctl verify" || len(pos) != 1 {
			t.Fatalf("%s/%d runs %s %v; want rlctl verify SCENARIO", p.job.Metadata.Name, p.index, name, pos)
		}
		seg, err := workload.ParseSegment(flag("segment"))
		if err != nil {
			t.Fatalf("%s/%d: --segment %q: %v", p.job.Metadata.Name, p.index, flag("segment"), err)
		}
		if want, _ := workload.ParseSegment(fmt.Sprintf("%d/%d", len(segs), len(pods))); seg.String() != want.String() {
			t.Fatalf("%s/%d sends segment %s; want %s, the next of %d", p.job.Metadata.Name, p.index, seg, want, len(pods))
		}
		segs = append(segs, seg)
		at, err := time.Parse(time.RFC3339Nano, flag("start-at"))
		if err != nil {
			t.Fatalf("%s/%d: --start-at %q: %v", p.job.Metadata.Name, p.index, flag("start-at"), err)
		}
		if startAt != "" && at.String() != startAt {
			t.Fatalf("%s/%d starts at %v, the first pod at %s: want one common start", p.job.Metadata.Name, p.index, at, startAt)
		}
		startAt = at.String()
		if flag("redis") == "" {
			t.Fatalf("%s/%d names no Redis to read the shared clock from", p.job.Metadata.Name, p.index)
		}
		vol, dir := p.job.volumeAt(t, flag("report-dir"))
		if claims[vol] == nil || slices.Contains(wrote, place{vol, dir}) {
			t.Fatalf("%s/%d writes to %s on %s: want its own directory of a claim the file makes", p.job.Metadata.Name, p.index, dir, vol)
		}
		wrote = append(wrote, place{vol, dir})
		writers[vol]++

		// The scenario file is the ConfigMap's, and it loads.
		cm, key := p.job.volumeAt(t, pos[0])
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
		if _, err := scenario.Load([]string{sc}); err != nil {
			t.Fatalf("%s/%d's scenario %s (%s): %v", p.job.Metadata.Name, p.index, pos[0], cm, err)
		}
	}
	// Pods of a run write at once, on nodes of their own.
	for vol, n := range writers {
		if n > 1 && !slices.Contains(claims[vol].Spec.AccessModes, "ReadWriteMany") {
			t.Fatalf("%d pods write to %s at once, which is %v: want ReadWriteMany, or a claim per pod", n, vol, claims[vol].Spec.AccessModes)
		}
	}

	args := mergeJob.Spec.Template.Spec.Containers[0].Args
	name, pos, flag := parseArgs(t, mergeJob.expand(t, args, 0, "rlctl-merge-a"))
	if name != "rlctl report merge" || flag("out") == "" {
		t.Fatalf("the merge Job runs %s --out %q; want rlctl report merge ... --out DIR", name, flag("out"))
	}
	var read []place
	for _, p := range pos {
		vol, dir := mergeJob.volumeAt(t, p)
		read = append(read, place{vol, path.Clean(dir)})
	}
	cmp := func(a, b place) int { return strings.Compare(a.vol+"\x00"+a.dir, b.vol+"\x00"+b.dir) }
	slices.SortFunc(read, cmp)
	slices.SortFunc(wrote, cmp)
	if !slices.Equal(read, wrote) {
		t.Fatalf("the merge reads %v; the pods wrote %v", read, wrote)
	}
	outVol, outDir := mergeJob.volumeAt(t, flag("out"))
	_, _, again := parseArgs(t, mergeJob.expand(t, args, 0, "rlctl-merge-b"))
	if claims[outVol] == nil || slices.Contains(wrote, place{outVol, path.Clean(outDir)}) || again("out") == flag("out") {
		t.Fatalf("the merge writes %s on %s, the same for every merge pod: want a fresh path (the pod's name in it) on a claim of the file", flag("out"), outVol)
	}
}
