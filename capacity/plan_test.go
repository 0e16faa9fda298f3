package capacity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/search"
)

// The quick plan runs every phase on the simulator and writes a summary with
// the fields issue 7 names, and leaves no temporary file behind.
func TestQuickPlanWritesSummary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a whole quick plan (seconds)")
	}
	dir := t.TempDir()
	var progress bytes.Buffer
	rendered := false
	d, err := Plan(context.Background(), config.Default(), PlanOptions{OutDir: dir, Quick: true, Progress: &progress,
		Render: func(dir string, d *plan.Summary) error {
			rendered = true
			return os.WriteFile(filepath.Join(dir, "report.html"), []byte("<html></html>"), 0o644)
		}})
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, progress.String())
	}
	if !rendered {
		t.Error("report renderer not called")
	}
	for _, phase := range []string{"== workload", "== baseline", "== tune", "== choose", "== sweep", "== trace", "== compare"} {
		if !strings.Contains(progress.String(), phase) {
			t.Errorf("no progress for phase %q", phase)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	capm, _ := m["capacity"].(map[string]any)
	if u, _ := capm["users"].(float64); u <= 0 || int(u) != d.Capacity.Users {
		t.Errorf("capacity.users = %v", capm["users"])
	}
	if f, _ := capm["first_failing_users"].(float64); f <= float64(d.Capacity.Users) {
		t.Errorf("capacity.first_failing_users = %v, want above the ceiling %d", capm["first_failing_users"], d.Capacity.Users)
	}
	if c, _ := capm["failed_clause"].(string); c == "" {
		t.Error("capacity.failed_clause is empty")
	}
	if cfg, _ := capm["config"].(map[string]any); len(cfg) == 0 {
		t.Error("capacity.config is empty")
	}
	for _, k := range []string{"pareto", "trials", "workload", "sla", "engine", "sweep", "assumptions"} {
		if _, ok := m[k]; !ok {
			t.Errorf("summary.json lacks %q", k)
		}
	}
	if d.Trials != config.Default().Search.Trials && d.Trials != quickTrials {
		t.Errorf("trials = %d", d.Trials)
	}
	if !strings.HasPrefix(d.Capacity.ServeCommand, "vllm serve openai/gpt-oss-120b --tensor-parallel-size 4") {
		t.Errorf("serve command %q", d.Capacity.ServeCommand)
	}
	// the sweep's levels are recorded, and the ceiling level passed
	var atCeiling *plan.SweepPoint
	for i := range d.Sweep {
		if d.Sweep[i].Users == d.Capacity.Users {
			atCeiling = &d.Sweep[i]
		}
	}
	if atCeiling == nil || !atCeiling.Pass {
		t.Errorf("no passing sweep point at the ceiling: %+v", d.Sweep)
	}
	entries, _ := os.ReadDir(dir)
	recs, _ := os.ReadDir(filepath.Join(dir, "records"))
	for _, e := range append(entries, recs...) {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
	if len(recs) == 0 {
		t.Error("no sweep records written")
	}
}

func TestChooseRules(t *testing.T) {
	base := plan.Candidate{Trial: -1, Ceiling: 100}
	tuned := plan.Candidate{Trial: 3, Ceiling: 100}
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
	cands := []plan.Candidate{{Trial: -1, Ceiling: 175}, {Trial: 17, Ceiling: 175}, {Trial: 5, Ceiling: 150}, {Trial: 24, Ceiling: 175}}
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
