package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/report"
)

// A plan's Summary survives the trip through its files: writeReport
// writes summary.json, which decodes to the same summary and encodes to the
// same bytes, and spoc report DIR renders from it the page the plan wrote,
// leaving summary.json as it was.
func TestPlanSummaryRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a whole quick plan (seconds)")
	}
	t.Parallel()
	dir := t.TempDir()
	setup, err := config.Default().Setup(config.SetupOptions{OutDir: dir, Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := plan.Run(context.Background(), setup, plan.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeReport(dir, s, nil); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"capacity", "pareto", "trials", "workload", "sla", "engine", "sweep", "assumptions", "search", "phases"} {
		if _, ok := m[k]; !ok {
			t.Errorf("summary.json lacks %q", k)
		}
	}
	var got plan.Summary
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	c, g := s.Capacity, got.Capacity
	if g.Users != c.Users || g.FirstFailingUsers != c.FirstFailingUsers || g.FailedClause != c.FailedClause ||
		g.ServeCommand != c.ServeCommand || g.ChosenTrial != c.ChosenTrial || len(g.Config) != len(c.Config) {
		t.Errorf("capacity after the round trip\n%+v\nwant\n%+v", g, c)
	}
	if !got.Generated.Equal(s.Generated) || got.Title != s.Title || got.Engine != s.Engine || !reflect.DeepEqual(got.SLA, s.SLA) ||
		got.Trials != s.Trials || len(got.Pareto) != len(s.Pareto) || len(got.Sweep) != len(s.Sweep) || len(got.Phases) != len(s.Phases) {
		t.Errorf("summary header after the round trip differs: %+v %+v", got.Engine, got.SLA)
	}
	for i := range min(len(got.Sweep), len(s.Sweep)) {
		a, b := got.Sweep[i], s.Sweep[i]
		if a.Users != b.Users || a.Pass != b.Pass || a.TTFTP95Ms != b.TTFTP95Ms || a.OutputThroughput != b.OutputThroughput {
			t.Errorf("sweep point %d: %+v, want %+v", i, a, b)
		}
	}
	var again bytes.Buffer
	if err := report.JSON(&again, &got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), raw) {
		t.Error("the decoded summary encodes to other bytes than summary.json")
	}

	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "report.html")); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runLoadCLI(t, "report", dir)
	if code != 0 {
		t.Fatalf("spoc report exit %d: %s", code, stderr)
	}
	if strings.TrimSpace(stdout) != filepath.Join(dir, "report.html") {
		t.Errorf("spoc report printed %q", stdout)
	}
	rendered, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rendered, page) {
		t.Error("spoc report DIR rendered another page from summary.json than the plan's")
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "summary.json")); !bytes.Equal(after, raw) {
		t.Error("spoc report DIR rewrote summary.json")
	}
}

// A plan that fails keeps the previous plan's files in its output folder
// untouched, prints no capacity and exits non-zero.
func TestFailedPlanKeepsPreviousReport(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	previous := map[string]string{"summary.json": `{"capacity":{"users":42}}` + "\n", "report.html": "<p>42 users</p>\n", "summary.md": "42 users\n"}
	for name, body := range previous {
		if err := os.WriteFile(filepath.Join(out, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The weights do not fit in 5% of the GPU memory: the baseline phase
	// fails after the workload phase succeeded.
	cfg := filepath.Join(dir, "spoc.yaml")
	if err := os.WriteFile(cfg, []byte("engine:\n  params:\n    gpu-memory-utilization: 0.05\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runLoadCLI(t, "plan", "-c", cfg, "--quick", "--out", out)
	if code == 0 {
		t.Fatalf("failed plan exited 0: %s", stdout)
	}
	if !strings.Contains(stderr, "baseline:") {
		t.Errorf("stderr does not name the failed phase:\n%s", stderr)
	}
	if strings.Contains(stdout, "capacity") {
		t.Errorf("failed plan printed a capacity: %q", stdout)
	}
	for name, body := range previous {
		if got, err := os.ReadFile(filepath.Join(out, name)); err != nil || string(got) != body {
			t.Errorf("%s after the failed plan: %q, %v; want it untouched", name, got, err)
		}
	}
}
