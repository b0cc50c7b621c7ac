package cli

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/target/httptarget"
)

// quick is a scenario that needs nothing but the process itself.
const quick = `name: %s
limit: 20/1s
target: {algorithm: local-fixed-window}
traffic: {rate: 50/s, duration: %s}
thresholds: [allowed > 0]
`

func writeScenario(t *testing.T, dir, name, duration string) string {
	t.Helper()
	p := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(p, []byte(fmt.Sprintf(quick, name, duration)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Two runs started in the same second get directories of their own: no
// report is overwritten, no history mixed into another run's.
func TestVerifyRunsInTheSameSecondNeverShareADirectory(t *testing.T) {
	dir := t.TempDir()
	a, b := writeScenario(t, dir, "first", "300ms"), writeScenario(t, dir, "second", "300ms")
	reports := filepath.Join(dir, "reports")
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, sc := range []string{a, b} {
		f, errOut := testFactory(&syncBuffer{}, nil)
		f.Now = func() time.Time { return now }
		if code := Run(f, []string{"verify", "--no-progress", "--report-dir", reports, sc}, nil, noExit(t)); code != 0 {
			t.Fatalf("verify %s: exit %d\n%s", sc, code, errOut.String())
		}
	}
	runs, _ := filepath.Glob(filepath.Join(reports, "20261130T120000Z-*"))
	if len(runs) != 2 {
		t.Fatalf("run directories %v, want two", runs)
	}
	for _, run := range runs {
		hs, _ := filepath.Glob(filepath.Join(run, "histories", "*.rlh"))
		if len(hs) != 1 {
			t.Errorf("%s holds histories %v, want its own one", run, hs)
		}
		rep := readReportJSON(t, run)
		if scs := rep["scenarios"].([]any); len(scs) != 1 {
			t.Errorf("%s: report of %d scenarios", run, len(scs))
		}
	}
}

// A --report-dir that cannot be written is found before any traffic:
// exit 2, and no scenario starts.
func TestVerifyUnwritableReportDirFailsBeforeTheRun(t *testing.T) {
	dir := t.TempDir()
	sc := writeScenario(t, dir, "never", "5s")
	blocker := filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f, errOut := testFactory(&syncBuffer{}, nil)
	start := time.Now()
	code := Run(f, []string{"verify", "--no-progress", "--report-dir", filepath.Join(blocker, "reports"), sc}, nil, noExit(t))
	if code != int(exitcode.Usage) {
		t.Fatalf("exit %d, want 2\n%s", code, errOut.String())
	}
	if strings.Contains(errOut.String(), "[1/1]") || time.Since(start) > 3*time.Second {
		t.Errorf("the run started before the report directory was checked:\n%s", errOut.String())
	}
	if !strings.Contains(errOut.String(), "--report-dir") {
		t.Errorf("the error does not name --report-dir:\n%s", errOut.String())
	}
}

// An interrupted run's junit.xml marks the cut scenario as an error and
// the one never started as skipped; exit 130.
func TestVerifyInterruptedRunJUnit(t *testing.T) {
	dir := t.TempDir()
	writeScenario(t, dir, "a-cut", "10s")
	writeScenario(t, dir, "b-never", "1s")
	reports := filepath.Join(dir, "reports")
	sig := make(chan os.Signal, 1)
	go func() {
		time.Sleep(700 * time.Millisecond)
		sig <- syscall.SIGINT
	}()
	f, errOut := testFactory(&syncBuffer{}, nil)
	code := Run(f, []string{"verify", "--no-progress", "--report-dir", reports, dir}, sig, noExit(t))
	if code != int(exitcode.Interrupted) {
		t.Fatalf("exit %d, want 130\n%s", code, errOut.String())
	}
	runs, _ := filepath.Glob(filepath.Join(reports, "*"))
	if len(runs) != 1 {
		t.Fatalf("runs %v", runs)
	}
	b, err := os.ReadFile(filepath.Join(runs[0], "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Errors  int `xml:"errors,attr"`
		Skipped int `xml:"skipped,attr"`
		Suites  []struct {
			Name string `xml:"name,attr"`
			Time string `xml:"time,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Errors != 1 || doc.Skipped != 1 || len(doc.Suites) != 2 {
		t.Fatalf("junit.xml errors=%d skipped=%d suites=%d, want 1 1 2:\n%s", doc.Errors, doc.Skipped, len(doc.Suites), b)
	}
	if doc.Suites[0].Time == "0.000" {
		t.Errorf("the cut scenario's time is 0:\n%s", b)
	}
	if rep := readReportJSON(t, runs[0]); rep["status"] != "incomplete" {
		t.Errorf("report status %v", rep["status"])
	}
}

// secretParams are query parameters a gateway's URL may carry a secret
// in under names no list of credential words catches, beside one named
// like a credential and one named in redact.
var secretParams = []string{"pass", "pw", "sid", "ticket", "bearer", "hmac", "otp", "pin", "zq_custom", "token", "code"}

// No query value of a target URL reaches the terminal, the reports or the
// saved histories but those of show_query and the identity parameter,
// over the fast HTTP client and net/http alike, and in the errors a failing
// gateway causes (some answers cut off; a third gateway answers nothing
// but the probe, so the run's error quotes the requests' URLs).
func TestVerifyNeverWritesURLSecrets(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The probe before a run is always answered: cut off, it would
		// fail the scenario before its run (as it did when a busy machine
		// dropped a few of the run before it, so the probe came 7th).
		if r.URL.Query().Get("api_key") == httptarget.ProbeID {
			w.WriteHeader(http.StatusOK)
			return
		}
		if n.Add(1)%7 == 0 {
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close() // an error that names the URL
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	plain := httptest.NewServer(h)
	defer plain.Close()
	tls := httptest.NewTLSServer(h)
	defer tls.Close()
	broken := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("api_key") == httptarget.ProbeID {
			w.WriteHeader(http.StatusOK)
			return
		}
		c, _, _ := w.(http.Hijacker).Hijack()
		c.Close()
	}))
	defer broken.Close()
	var query []string
	for _, p := range secretParams {
		query = append(query, p+"=S3CRET-"+p)
	}
	dir := t.TempDir()
	for i, base := range []string{plain.URL, tls.URL, broken.URL} {
		doc := fmt.Sprintf(`name: secret-%d
limit: 1000/1s
max_error_rate: 0.5
target:
  kind: http
  urls: ["%s/v1?%s&page=2"]
  identity: {query: api_key}
  show_query: [page]
  redact: [code]
  tls: {insecure_skip_verify: true}
traffic: {rate: 100/s, duration: 500ms, identities: 2}
thresholds: [allowed > 0]
`, i, base, strings.Join(query, "&"))
		if i == 0 {
			doc = strings.Replace(doc, "  tls: {insecure_skip_verify: true}\n", "", 1)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("s%d.yaml", i)), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reports := filepath.Join(dir, "reports")
	out := &syncBuffer{}
	f, errOut := testFactory(out, nil)
	code := Run(f, []string{"verify", "--no-progress", "--report-dir", reports, dir}, nil, noExit(t))
	if code == 0 {
		t.Fatalf("exit 0 with a gateway that answers nothing\n%s\n%s", out.String(), errOut.String())
	}
	var all bytes.Buffer
	all.WriteString(out.String())
	all.WriteString(errOut.String())
	files := 0
	filepath.Walk(reports, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			b, _ := os.ReadFile(p)
			all.Write(b)
			files++
		}
		return nil
	})
	text := all.String()
	if i := strings.Index(text, "S3CRET"); i >= 0 {
		t.Errorf("a secret was written: …%s…", text[max(0, i-120):i+20])
	}
	for _, p := range secretParams {
		if !strings.Contains(text, p+"=xxxxx") {
			t.Errorf("%s= is never shown, redacted", p)
		}
	}
	if !strings.Contains(text, "page=2") || strings.Contains(text, "page=xxxxx") {
		t.Errorf("show_query: [page] does not show page=2")
	}
	if !strings.Contains(text, "api_key=") || strings.Contains(text, "api_key=xxxxx") {
		t.Errorf("the identity parameter's value (an identity name) is hidden or never shown")
	}
	if files < 10 {
		t.Errorf("only %d report and history files written; stderr:\n%s", files, errOut)
	}
	if n.Load() < 70 {
		t.Errorf("the gateways saw %d requests: the run did not reach them", n.Load())
	}
}
