package plan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/search"
)

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
	cfg := config.Default()
	s, err := Run(context.Background(), cfg, Options{OutDir: dir, Quick: true, Progress: &progress, Engine: simLauncher(t, cfg)})
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, progress.String())
	}
	for _, phase := range []string{"== workload", "== baseline", "== tune", "== choose", "== sweep", "== trace", "== compare"} {
		if !strings.Contains(progress.String(), phase) {
			t.Errorf("no progress for phase %q", phase)
		}
	}
	if len(s.Phases) != 7 {
		t.Errorf("%d phases recorded, want 7: %+v", len(s.Phases), s.Phases)
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
	if len(c.Config) == 0 {
		t.Error("capacity.config is empty")
	}
	if s.Workload == nil || len(s.Sweep) == 0 || len(s.Assumptions) == 0 || s.Search == nil || len(s.Candidates) == 0 || s.Engine.Model == "" {
		t.Errorf("a section is missing: workload %v, sweep %d, assumptions %d, search %v, candidates %d, engine %+v",
			s.Workload != nil, len(s.Sweep), len(s.Assumptions), s.Search != nil, len(s.Candidates), s.Engine)
	}
	if s.Trials != config.Default().Search.Trials && s.Trials != quickTrials {
		t.Errorf("trials = %d", s.Trials)
	}
	if !strings.HasPrefix(c.ServeCommand, "vllm serve openai/gpt-oss-120b --tensor-parallel-size 4") {
		t.Errorf("serve command %q", c.ServeCommand)
	}
	// the sweep's levels are recorded, and the ceiling level passed
	var atCeiling *SweepPoint
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
	s, err := Run(context.Background(), cfg, Options{OutDir: t.TempDir(), Quick: true, Progress: &progress, Engine: simLauncher(t, cfg)})
	if err == nil || s != nil {
		t.Fatalf("Run = %v, %v; want no summary and an error", s, err)
	}
	if !strings.HasPrefix(err.Error(), "baseline: ") || !strings.Contains(progress.String(), "== workload") {
		t.Errorf("error %q after progress\n%s\nwant the baseline phase's, after the workload phase", err, progress.String())
	}
}

func TestChooseRules(t *testing.T) {
	base := Candidate{Trial: -1, Ceiling: 100}
	tuned := Candidate{Trial: 3, Ceiling: 100}
	if better("highest-ceiling", tuned, base, 2000, 1000) {
		t.Error("a tie on the ceiling must keep the baseline")
	}
	tuned.Ceiling = 110
	if !better("highest-ceiling", tuned, base, 900, 1000) {
		t.Error("a higher ceiling must win")
	}
	if better("max-throughput", tuned, base, 900, 1000) {
		t.Error("max-throughput must follow throughput at the ceiling")
	}
}

func TestTieBreakByFullSweep(t *testing.T) {
	cands := []Candidate{{Trial: -1, Ceiling: 175}, {Trial: 17, Ceiling: 175}, {Trial: 5, Ceiling: 150}, {Trial: 24, Ceiling: 175}}
	tied := tiedAtTop("highest-ceiling", cands)
	if !slices.Equal(tied, []int{0, 1, 3}) {
		t.Fatalf("tied %v, want [0 1 3]", tied)
	}
	if tiedAtTop("max-throughput", cands) != nil {
		t.Error("max-throughput has no ceiling ties to break")
	}
	full := map[int]int{0: 156, 1: 162, 3: 159}
	var ran []int
	w, err := breakTie(cands, tied, func(i int) (int, string, error) {
		ran = append(ran, i)
		return full[i], "P2 ttft", nil
	})
	if err != nil || w != 1 || !slices.Equal(ran, tied) {
		t.Fatalf("winner %d (ran %v, err %v), want trial #17 at index 1", w, ran, err)
	}
	if cands[0].FullCeiling != 156 || cands[3].FullCeiling != 159 || cands[2].FullCeiling != 0 {
		t.Errorf("full ceilings not recorded: %+v", cands)
	}
	// A tie again keeps the earlier candidate (the baseline).
	full = map[int]int{0: 160, 1: 160, 3: 158}
	if w, _ := breakTie(cands, tied, func(i int) (int, string, error) { return full[i], "", nil }); w != 0 {
		t.Errorf("equal full sweeps chose %d, want the baseline", w)
	}
	// An infeasible candidate drops out; other errors stop the plan.
	w, err = breakTie(cands, tied, func(i int) (int, string, error) {
		if i == 1 {
			return 0, "", fmt.Errorf("weights: %w", search.ErrInfeasible)
		}
		return 150 + i, "", nil
	})
	if err != nil || w != 3 {
		t.Errorf("with #17 infeasible: winner %d, %v; want index 3", w, err)
	}
	if _, err := breakTie(cands, tied, func(int) (int, string, error) { return 0, "", errors.New("boom") }); err == nil {
		t.Error("a failing full sweep was ignored")
	}
	if _, err := breakTie(cands, tied, func(int) (int, string, error) { return 0, "", search.ErrInfeasible }); err == nil {
		t.Error("all tied candidates infeasible: no error")
	}
}

// simLauncher is the simulator launcher of cfg's engine section.
func simLauncher(t testing.TB, cfg *config.Config) engine.Launcher {
	t.Helper()
	l, err := engine.NewSimFromConfig(cfg.Engine, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}
