package plan_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/plan"
)

// quickSetup resolves cfg as spoc plan --quick does.
func quickSetup(t testing.TB, cfg *config.Config, out string) plan.Setup {
	t.Helper()
	s, err := cfg.Setup(config.SetupOptions{Quick: true, OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The quick plan runs every phase on the simulator and returns a summary
// with the fields issue 7 names. It writes the sweep's records, leaves no
// temporary file behind, and writes no report file: rendering is the
// report package's.
func TestQuickPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a whole quick plan (seconds)")
	}
	dir := t.TempDir()
	var progress bytes.Buffer
	s, err := plan.Run(context.Background(), quickSetup(t, config.Default(), dir), plan.Options{Progress: &progress})
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, progress.String())
	}
	for _, phase := range []string{"== workload", "== baseline", "== tune", "== choose", "== sweep", "== default", "== trace", "== compare"} {
		if !strings.Contains(progress.String(), phase) {
			t.Errorf("no progress for phase %q", phase)
		}
	}
	if len(s.Phases) != 8 {
		t.Errorf("%d phases recorded, want 8: %+v", len(s.Phases), s.Phases)
	}
	c := s.Capacity
	if c.Users <= 0 {
		t.Errorf("capacity.users = %d", c.Users)
	}
	if c.FirstFailingUsers <= c.Users {
		t.Errorf("capacity.first_failing_users = %d, want above the ceiling %d", c.FirstFailingUsers, c.Users)
	}
	if c.FailedClause == "" {
		t.Error("capacity.failed_clause is empty")
	}
	// --quick measures the interval over 3 workload seeds; the ceiling is
	// the first seed's and the comparison with engine.params uses the same
	// seeds.
	if iv := c.CeilingInterval; iv == nil || len(iv.Seeds) != 3 || iv.Seeds[0].Ceiling != c.Users || iv.Lo > iv.Hi || c.Ceiling != c.Users {
		t.Errorf("capacity.ceiling_interval = %+v (no_interval %q), ceiling %d", iv, c.NoInterval, c.Ceiling)
	}
	if m := c.BindingMargin; m == nil || m.AtFirstFailing <= m.Limit || m.AtCeiling > m.Limit {
		t.Errorf("binding margin %+v: want the clause within its limit at the ceiling and over it above", m)
	}
	// the chosen configuration is the tuned one, or, when the plan kept
	// engine.params, the default one (the best candidate is compared)
	if tv := s.TunedVsDefault; tv == nil || tv.Verdict == "" || (tv.KeptDefault && tv.Default.Users != c.Users) || (!tv.KeptDefault && tv.Tuned.Users != c.Users) ||
		(!tv.Same && (tv.Default.Interval == nil || tv.Tuned.Interval == nil || tv.Difference == nil)) {
		t.Errorf("tuned_vs_default = %+v", tv)
	}
	if len(c.Config) == 0 {
		t.Error("capacity.config is empty")
	}
	if s.Workload == nil || len(s.Sweep) == 0 || len(s.Assumptions) == 0 || s.Search == nil || len(s.Candidates) == 0 || s.Engine.Model == "" {
		t.Errorf("a section is missing: workload %v, sweep %d, assumptions %d, search %v, candidates %d, engine %+v",
			s.Workload != nil, len(s.Sweep), len(s.Assumptions), s.Search != nil, len(s.Candidates), s.Engine)
	}
	if s.Trials != config.Default().Search.Trials && s.Trials != 12 {
		t.Errorf("trials = %d", s.Trials)
	}
	if !strings.HasPrefix(c.ServeCommand, "vllm serve openai/gpt-oss-120b --tensor-parallel-size 4") {
		t.Errorf("serve command %q", c.ServeCommand)
	}
	// the sweep's levels are recorded, and the ceiling level passed
	var atCeiling *plan.SweepPoint
	for i := range s.Sweep {
		if s.Sweep[i].Users == c.Users {
			atCeiling = &s.Sweep[i]
		}
	}
	if atCeiling == nil || !atCeiling.Pass {
		t.Errorf("no passing sweep point at the ceiling: %+v", s.Sweep)
	}
	entries, _ := os.ReadDir(dir)
	recs, _ := os.ReadDir(filepath.Join(dir, "records"))
	for _, e := range append(entries, recs...) {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
		if name := e.Name(); name == "summary.json" || name == "report.html" || name == "summary.md" {
			t.Errorf("Run wrote %s; report files are report.WriteFiles'", name)
		}
	}
	if len(recs) == 0 {
		t.Error("no sweep records written")
	}
}

// A plan that fails in a phase returns no summary, so that no caller
// prints or writes a capacity that was never established.
func TestFailedPlanReturnsNoSummary(t *testing.T) {
	cfg := config.Default()
	// the weights do not fit: the baseline phase fails on its first level
	cfg.Engine.Params["gpu-memory-utilization"] = 0.05
	var progress bytes.Buffer
	dir := t.TempDir()
	s, err := plan.Run(context.Background(), quickSetup(t, cfg, dir), plan.Options{Progress: &progress})
	if err == nil || s != nil {
		t.Fatalf("Run = %v, %v; want no summary and an error", s, err)
	}
	if !strings.HasPrefix(err.Error(), "baseline: ") || !strings.Contains(progress.String(), "== workload") {
		t.Errorf("error %q after progress\n%s\nwant the baseline phase's, after the workload phase", err, progress.String())
	}
}
