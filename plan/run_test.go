package plan_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/result"
)

// quickSetup resolves cfg as spoc plan --quick does.
func quickSetup(t testing.TB, cfg *config.Config, out string) plan.Setup {
	t.Helper()
	s, err := cfg.Setup(config.SetupOptions{Quick: true, OutDir: out, Plan: true})
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
	t.Parallel() // seconds of CPU in a plan of its own: overlaps the others
	dir := t.TempDir()
	var progress bytes.Buffer
	cfg := config.Default()
	// the cost section and compare rows too, so that the JSON walk below
	// sees every section a plan can write
	cfg.Plan.TargetUsers = 1000
	cfg.Plan.GPUPricePerHour = map[string]float64{"H100-SXM": 2.5, "H200-SXM": 3.5}
	// a peak heavier in whole-codebase sessions than the workload's mix
	cfg.Plan.PeakShares = map[string]float64{"P0": 0.5, "P1": 0.3, "P2": 0.2}
	setup, err := cfg.Setup(config.SetupOptions{Quick: true, OutDir: dir, Compare: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := plan.Run(context.Background(), setup, plan.Options{Progress: &progress})
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, progress.String())
	}
	checkSnakeCase(t, s)
	// the default --compare target 2x H200 is hardware the calibration
	// never saw: the envelope, its cost row and the notes say so
	if x := s.Envelope.TargetOutside("2x H200"); !strings.Contains(x, "gpu H200-SXM outside") {
		t.Errorf("2x H200 envelope excursions %q, want the GPU (envelope compare %+v)", x, s.Envelope)
	}
	h200cost := false
	for _, r := range s.Cost.Rows {
		h200cost = h200cost || (r.Option == "2x H200" && strings.Contains(r.Extrapolates, "gpu H200-SXM"))
	}
	if !h200cost {
		t.Errorf("no cost row of 2x H200 marked outside the calibration: %+v", s.Cost.Rows)
	}
	if !strings.Contains(strings.Join(s.Notes, "\n"), "compare target 2x H200") {
		t.Errorf("the plan's notes do not name the 2x H200 excursion: %q", s.Notes)
	}
	for _, phase := range []string{"== workload", "== baseline", "== tune", "== choose", "== sweep", "== default", "== trace", "== compare", "== peak"} {
		if !strings.Contains(progress.String(), phase) {
			t.Errorf("no progress for phase %q", phase)
		}
	}
	if len(s.Phases) != 9 {
		t.Errorf("%d phases recorded, want 9 (peak and default included): %+v", len(s.Phases), s.Phases)
	}
	// the cost section is sized at the peak mix, measured on every option
	if s.Peak == nil || s.Peak.Chosen.Users <= 0 || len(s.Peak.Compare) != 2 || s.Cost == nil || s.Cost.PeakShares["P2"] != 0.2 {
		t.Fatalf("peak mix: %+v, cost %+v", s.Peak, s.Cost)
	}
	if got, want := s.Cost.Rows[0].CeilingUsers, s.Peak.Chosen.Users; got != want {
		t.Errorf("cost sized at %d users, the peak-mix ceiling is %d", got, want)
	}
	// P2 sessions are the heaviest: a peak with twice their share serves
	// fewer users than the workload's mix
	if s.Peak.Chosen.Users >= s.Capacity.Users {
		t.Errorf("peak mix ceiling %d, workload mix %d: want fewer at a heavier mix", s.Peak.Chosen.Users, s.Capacity.Users)
	}
	c := s.Capacity
	if c.Users <= 0 {
		t.Errorf("capacity.users = %d", c.Users)
	}
	if c.FirstFailingUsers <= c.Ceiling {
		t.Errorf("capacity.first_failing_users = %d, want above the walk's ceiling %d", c.FirstFailingUsers, c.Ceiling)
	}
	if c.FailedClause == "" {
		t.Error("capacity.failed_clause is empty")
	}
	// --quick estimates the capacity with 4 to 8 fresh-seed runs: the
	// capacity is the estimate rounded down, inside its interval, near the
	// walk's ceiling; the refinement says what it spent
	e, r := c.Estimate, c.Refinement
	if e == nil || r == nil || c.Users != int(math.Floor(e.Users)) || e.Lo > e.Users || (e.Bounded && e.Users > float64(e.Hi)) ||
		r.Runs < 4 || r.Runs > 8 || (r.Reached != (e.Bounded && float64(e.Precision) <= r.Target)) {
		t.Fatalf("capacity estimate %+v, refinement %+v (no estimate: %q), users %d", e, r, c.NoEstimate, c.Users)
	}
	if math.Abs(e.Users-float64(c.Ceiling)) > 0.25*float64(c.Ceiling) {
		t.Errorf("estimate %.1f is more than 25 %% from the walk's ceiling %d", e.Users, c.Ceiling)
	}
	if c.Runs <= r.Runs || c.EngineSeconds <= 0 {
		t.Errorf("runs %d, engine seconds %.0f: want the walk and the refinement counted", c.Runs, c.EngineSeconds)
	}
	if m := c.BindingMargin; m == nil || m.AtFirstFailing <= m.Limit || m.AtCeiling > m.Limit {
		t.Errorf("binding margin %+v: want the clause within its limit at the ceiling and over it above", m)
	}
	// the chosen configuration is the tuned one, or, when the plan kept
	// engine.params, the default one (the best candidate is compared)
	if tv := s.TunedVsDefault; tv == nil || tv.Verdict == "" || (tv.KeptDefault && tv.Default.Capacity != c.Users) || (!tv.KeptDefault && tv.Tuned.Capacity != c.Users) ||
		(!tv.Same && (tv.Default.Estimate == nil || tv.Tuned.Estimate == nil || tv.Difference == nil)) {
		t.Errorf("tuned_vs_default = %+v", tv)
	}
	if len(c.Config) == 0 {
		t.Error("capacity.config is empty")
	}
	if s.Workload == nil || len(s.Sweep) == 0 || len(s.Assumptions) == 0 || s.Search == nil || len(s.Candidates) == 0 || s.Engine.Model == "" {
		t.Errorf("a section is missing: workload %v, sweep %d, assumptions %d, search %v, candidates %d, engine %+v",
			s.Workload != nil, len(s.Sweep), len(s.Assumptions), s.Search != nil, len(s.Candidates), s.Engine)
	}
	// search.users: 0 is resolved to the baseline's ceiling: the
	// assumption shows the load the study ran at, marked automatic
	// a candidate with the chosen one's ceiling says how the tie was broken
	var chosen *plan.Candidate
	for i := range s.Candidates {
		if s.Candidates[i].Chosen {
			chosen = &s.Candidates[i]
		}
	}
	for _, cd := range s.Candidates {
		if tied := chosen != nil && cd.Trial != chosen.Trial && cd.Ceiling == chosen.Ceiling; tied != (cd.TieBreak != "") || tied && chosen.TieBreak == "" {
			t.Errorf("candidate %d (ceiling %d, chosen %+v): tie-break %q", cd.Trial, cd.Ceiling, chosen, cd.TieBreak)
		}
	}
	autoUsers := 0
	for _, a := range s.Assumptions {
		if a.Field == "search.users" {
			autoUsers++
			if s.Search == nil || a.Value != fmt.Sprint(s.Search.Users) || s.Search.Users == 0 || a.Automatic == "" {
				t.Errorf("assumption search.users = %+v; the study tuned at %+v users", a, s.Search)
			}
		}
	}
	if autoUsers != 1 {
		t.Errorf("search.users is listed %d times among the assumptions, want once", autoUsers)
	}
	if s.Trials != config.Default().Search.Trials && s.Trials != 12 {
		t.Errorf("trials = %d", s.Trials)
	}
	if !strings.HasPrefix(c.ServeCommand, "vllm serve openai/gpt-oss-120b ") || !strings.Contains(c.ServeCommand, " --tensor-parallel-size 4") {
		t.Errorf("serve command %q", c.ServeCommand)
	}
	// the sweep's levels are recorded, and the ceiling level passed
	var atCeiling *plan.SweepPoint
	for i := range s.Sweep {
		if s.Sweep[i].Users == c.Ceiling {
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
			t.Errorf("Run wrote %s; report files are the CLI's (report.Files)", name)
		}
	}
	if len(recs) == 0 {
		t.Error("no sweep records written")
	}
	// the sweep's records are compressed, and read back as records
	for _, e := range recs {
		if !strings.HasSuffix(e.Name(), ".jsonl.gz") {
			t.Errorf("records file %s: want users-NNNNN.jsonl.gz", e.Name())
			continue
		}
		f, err := os.Open(filepath.Join(dir, "records", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		truncated, err := result.ReadAll(f, e.Name(), func(*result.Record) error { n++; return nil })
		f.Close()
		if err != nil || truncated || n == 0 {
			t.Errorf("%s: %d records, truncated %v, err %v", e.Name(), n, truncated, err)
		}
	}
}

// checkSnakeCase walks every key of the summary's JSON (what summary.json
// holds) and fails on one that is not snake_case. Keys of the maps of engine
// flags are vLLM's flag names (max-num-seqs), data rather than field names,
// and are checked as such.
func checkSnakeCase(t *testing.T, s *plan.Summary) {
	t.Helper()
	if s.Cost == nil || len(s.Compare) == 0 {
		t.Errorf("cost %v, %d compare rows: the walk would miss sections", s.Cost != nil, len(s.Compare))
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	flag := regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)
	flagMaps := map[string]bool{"params": true, "config": true, "flags": true}
	profileMaps := map[string]bool{"shares": true, "peak_shares": true}
	seen := 0
	var walk func(v any, path string, flags bool)
	walk = func(v any, path string, flags bool) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				seen++
				if profileMaps[path[strings.LastIndex(path, ".")+1:]] {
					continue // a profile name
				}
				if flags && !flag.MatchString(k) {
					t.Errorf("%s: engine flag key %q is not a vLLM flag name", path, k)
				} else if !flags && !snake.MatchString(k) {
					t.Errorf("%s: key %q is not snake_case", path, k)
				}
				walk(x, path+"."+k, !flags && flagMaps[k])
			}
		case []any:
			for _, x := range v {
				walk(x, path+"[]", false)
			}
		}
	}
	walk(doc, "", false)
	if seen < 100 {
		t.Errorf("walked only %d keys", seen)
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
