package plan_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/internal/testharness/testtool"
	"github.com/spoc-project/spoc/plan"
)

// On the simulator engine the multi plan is the simulated plan: the same
// phases, no live phase, the same ceiling for the same seed, and a note
// that says why.
func TestMultiOnTheSimulatorIsTheSimulatedPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two quick plans (seconds)")
	}
	t.Parallel() // seconds of CPU in a plan of its own: overlaps the others
	run := func(mode string) (*plan.Summary, string) {
		cfg := config.Default()
		cfg.Plan.Fidelity = mode
		var progress bytes.Buffer
		s, err := plan.Run(context.Background(), quickSetup(t, cfg, t.TempDir()), plan.Options{Progress: &progress})
		if err != nil {
			t.Fatalf("%s plan: %v\n%s", mode, err, progress.String())
		}
		return s, progress.String()
	}
	simulated, _ := run("")
	multi, progress := run(plan.FidelityMulti)
	if multi.Capacity.Users != simulated.Capacity.Users || multi.Capacity.Users == 0 {
		t.Errorf("multi ceiling %d, simulated %d: want the same", multi.Capacity.Users, simulated.Capacity.Users)
	}
	for _, phase := range []string{"== probe", "== calibrate", "== verify"} {
		if strings.Contains(progress, phase) {
			t.Errorf("multi on the simulator ran %q", phase)
		}
	}
	if f := multi.Fidelity; f == nil || f.Mode != plan.FidelitySimulated || f.Requested != plan.FidelityMulti || f.LiveEngineSeconds != 0 {
		t.Errorf("fidelity section %+v", f)
	}
	if simulated.Fidelity == nil || simulated.Fidelity.Mode != plan.FidelitySimulated || simulated.Fidelity.Requested != "" {
		t.Errorf("default fidelity on the simulator: %+v", simulated.Fidelity)
	}
	if !strings.Contains(strings.Join(multi.Notes, "\n"), "plan.fidelity multi on the simulator engine is the simulated plan") {
		t.Errorf("no note says multi was the simulated plan: %q", multi.Notes)
	}
}

// processConfig is a plan on a process engine that is never started: its
// command does not exist.
func processConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Engine.Kind = config.EngineProcess
	cfg.Engine.Process.Command = []string{filepath.Join(t.TempDir(), "no-such-server"), "--port", "{{.Port}}"}
	return cfg
}

// A budget below the multi plan's probes is refused before anything runs,
// naming the minimum; the output folder is not even created.
func TestBudgetBelowTheProbesIsRefused(t *testing.T) {
	cfg := processConfig(t)
	cfg.Plan.Budget = config.Duration(10 * time.Second)
	out := filepath.Join(t.TempDir(), "out")
	s, err := cfg.Setup(config.SetupOptions{OutDir: out, Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := plan.Run(context.Background(), s, plan.Options{})
	if sum != nil || !errors.Is(err, plan.ErrBudget) {
		t.Fatalf("Run = %v, %v; want refused with ErrBudget", sum, err)
	}
	// 3 probes of the quick sweep windows plus 0.5 s each
	w := s.Windows.Sweep
	least := 3 * (max(w.Ramp, w.Warmup) + w.Duration + plan.RunOverhead)
	if !strings.Contains(err.Error(), "at least "+least.Round(time.Second).String()) || !strings.Contains(err.Error(), "multi") {
		t.Errorf("error %q does not name the minimum %s", err, least)
	}
	if _, serr := os.Stat(out); !os.IsNotExist(serr) {
		t.Errorf("a refused plan created %s", out)
	}
}

// The estimate counts the runs each fidelity makes by running the plan on
// the simulator, without starting the engine when its start-up time is
// configured: the live plan makes many runs, the multi plan a few, the
// simulated plan none.
func TestEstimateCountsEachFidelity(t *testing.T) {
	if testing.Short() {
		t.Skip("dry-runs two quick plans on the simulator (seconds)")
	}
	testtool.Long(t, "dry-runs the reference case's live and multi plans on the simulator: about 15 s of CPU; the fast lane checks --estimate on a small plan (internal/cli TestMultiPlanBudgetAndEstimate)")
	t.Parallel() // seconds of CPU in a plan of its own: overlaps the others
	cfg := processConfig(t)
	cfg.Plan.EngineStartup = config.Duration(90 * time.Second)
	s, err := cfg.Setup(config.SetupOptions{OutDir: t.TempDir(), Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	est, err := plan.EstimateEngineTime(context.Background(), s, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]plan.EstimateRow{}
	for _, r := range est.Rows {
		rows[r.Fidelity] = r
	}
	live, multi, simulated := rows[plan.FidelityLive], rows[plan.FidelityMulti], rows[plan.FidelitySimulated]
	if est.StartupSeconds != 90 || !strings.HasPrefix(est.StartupSource, "configured") {
		t.Errorf("start-up %v (%s), want the configured 90 s", est.StartupSeconds, est.StartupSource)
	}
	// the live plan: a baseline sweep, every trial on its own server, the
	// candidates' short sweeps and the final sweep
	if live.Runs < s.Search.Trials+3 || live.Starts < s.Search.Trials {
		t.Errorf("live: %d runs on %d servers for %d trials", live.Runs, live.Starts, s.Search.Trials)
	}
	want := live.WindowSeconds + float64(live.Runs)*plan.RunOverhead.Seconds() + float64(live.Starts)*90
	if d := live.EngineSeconds - want; d > 1e-6 || d < -1e-6 {
		t.Errorf("live engine time %.1f s, want windows + overhead + start-ups = %.1f s", live.EngineSeconds, want)
	}
	// the refinement may need every run sweep.max_runs allows: a range
	if live.MaxEngineSeconds < live.EngineSeconds || live.MaxEngineSeconds == 0 || multi.MaxEngineSeconds < multi.EngineSeconds || multi.MaxEngineSeconds == 0 {
		t.Errorf("at most: live %.0f s of %.0f s, multi %.0f s of %.0f s: want the refined sweeps' runs up to sweep.max_runs above each",
			live.MaxEngineSeconds, live.EngineSeconds, multi.MaxEngineSeconds, multi.EngineSeconds)
	}
	// the multi plan: 3 probes and 2 verified points, on 2–4 servers
	if multi.Runs < 5 || multi.Runs >= live.Runs || multi.Starts < 2 || multi.EngineSeconds >= live.EngineSeconds || !multi.Default {
		t.Errorf("multi: %+v; live: %+v", multi, live)
	}
	if simulated.Runs != 0 || simulated.EngineSeconds != 0 {
		t.Errorf("simulated: %+v", simulated)
	}
	if multi.MinimumSeconds <= 0 || multi.MinimumSeconds > multi.EngineSeconds {
		t.Errorf("multi minimum %.0f s of %.0f s", multi.MinimumSeconds, multi.EngineSeconds)
	}
}

// An external server is already running and keeps its flags: --estimate
// starts nothing (the server's URL answers nothing here), counts no server
// start and no study, and prices multi as the live plan it is; the
// capacity sweep's walk is the baseline's (measured once), so the live
// count has the baseline, the refinement and nothing of a search.
func TestEstimateForAnExternalServer(t *testing.T) {
	if testing.Short() {
		t.Skip("dry-runs a quick plan on the simulator (seconds)")
	}
	t.Parallel() // seconds of CPU in a plan of its own: overlaps the others
	cfg := config.Default()
	cfg.Engine.Kind = config.EngineExternal
	cfg.Engine.External.URL = "http://127.0.0.1:1" // nothing listens: a start or a preflight would fail
	s, err := cfg.Setup(config.SetupOptions{OutDir: t.TempDir(), Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	est, err := plan.EstimateEngineTime(context.Background(), s, plan.Options{Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if est.StartupSeconds != 0 || !strings.HasPrefix(est.StartupSource, "none: the external server is already running") {
		t.Errorf("start-up %.1f s (%s): want none, the server is running", est.StartupSeconds, est.StartupSource)
	}
	rows := map[string]plan.EstimateRow{}
	for _, r := range est.Rows {
		rows[r.Fidelity] = r
	}
	live, multi := rows[plan.FidelityLive], rows[plan.FidelityMulti]
	if live.Starts != 0 || live.Runs == 0 || !live.Default {
		t.Errorf("live: %+v; want runs on no server start, the default fidelity", live)
	}
	// no study: the tune phase counts no run
	re := regexp.MustCompile(`estimate live: phase \d/\d (\S+) .*counted so far (\d+) runs?`)
	counted := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(progress.String(), -1) {
		counted[m[1]] = m[2]
	}
	if counted["baseline"] == "" || counted["tune"] != counted["baseline"] {
		t.Errorf("runs counted after baseline %q, after tune %q: want no study on an external server\n%s", counted["baseline"], counted["tune"], progress.String())
	}
	// the progress counts no start of the simulator standing in for it
	if regexp.MustCompile(`\d+ server starts?`).MatchString(progress.String()) {
		t.Errorf("the progress counts server starts on an external server:\n%s", progress.String())
	}
	if live.IfNoFeasibleSeconds != 0 {
		t.Errorf("live: a no-feasible-trial branch (%.0f s) without a study", live.IfNoFeasibleSeconds)
	}
	if multi.Runs != live.Runs || multi.EngineSeconds != live.EngineSeconds || multi.Default || !strings.Contains(multi.Note, "the same as live") {
		t.Errorf("multi %+v, want live's count (%+v): multi on an external server is the live plan", multi, live)
	}
}

// plan.fidelity simulated on a real engine never starts it: every number
// is simulated, and the summary says the engine was not started.
func TestSimulatedFidelityOnARealEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a quick plan (seconds)")
	}
	// seconds of CPU in a plan of its own: overlaps the others
	t.Parallel()
	cfg := processConfig(t) // its command does not exist: starting it would fail
	cfg.Plan.Fidelity = plan.FidelitySimulated
	s, err := plan.Run(context.Background(), quickSetup(t, cfg, t.TempDir()), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Capacity.Users == 0 || s.Capacity.Provenance.Source != "simulated" || s.Fidelity.Mode != plan.FidelitySimulated || s.Fidelity.LiveEngineSeconds != 0 {
		t.Errorf("capacity %d from %+v, fidelity %+v", s.Capacity.Users, s.Capacity.Provenance, s.Fidelity)
	}
	if !strings.Contains(strings.Join(s.Notes, "\n"), "the process engine was not started") {
		t.Errorf("no note says the engine was not started: %q", s.Notes)
	}
}
