package plan

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/internal/words"
)

// Estimate is the engine time each fidelity of a plan would take, before
// anything runs on the engine (spoc plan --estimate).
type Estimate struct {
	// StartupSeconds is one server's start-up time; StartupSource says
	// whether it was configured (plan.engine_startup), measured (one
	// start of the engine with the configured flags) or does not apply
	// (the simulator engine).
	StartupSeconds float64 `json:"startup_seconds"`
	StartupSource  string  `json:"startup_source"`
	// RunOverheadSeconds is what each run adds to its windows, and
	// RunOverheadSource where it comes from (RunOverheadAssumed unless
	// plan.run_overhead gives a measurement of this engine).
	RunOverheadSeconds float64       `json:"run_overhead_seconds"`
	RunOverheadSource  string        `json:"run_overhead_source"`
	Rows               []EstimateRow `json:"fidelities"`
	BudgetSeconds      float64       `json:"budget_engine_seconds,omitempty"`
	GPUs               int           `json:"gpus"`
	Method             string        `json:"method"`
}

// EstimateRow is one fidelity's engine time: the runs and server starts
// its control flow makes (counted by running the plan on the simulator),
// their windows, and the total with start-up and per-run overhead.
type EstimateRow struct {
	Fidelity      string  `json:"fidelity"`
	Runs          int     `json:"runs"`
	Starts        int     `json:"starts"`
	WindowSeconds float64 `json:"window_seconds"`
	EngineSeconds float64 `json:"engine_seconds"`
	// MaxEngineSeconds is the most the plan may take when its refined
	// sweeps need every run sweep.max_runs allows (a live engine noisier
	// than the simulator reaches sweep.precision later): EngineSeconds is
	// then the low end of a range. 0 when nothing is refined.
	MaxEngineSeconds float64 `json:"max_engine_seconds,omitempty"`
	GPUHours         float64 `json:"gpu_hours"`
	MinimumSeconds   float64 `json:"minimum_engine_seconds"`
	// IfNoFeasibleSeconds is the live plan's engine time when its study
	// finds no feasible trial at its tuning load: the choose and default
	// phases then run nothing (the plan keeps engine.params). The count
	// follows the simulator's decisions, and near the knee a live study can
	// decide otherwise: the two totals are the plan's two likely costs
	// (the second may lack one server start, when the dry run's sweep
	// reused a candidate's server).
	IfNoFeasibleSeconds float64 `json:"engine_seconds_if_no_feasible_trial,omitempty"`
	// Default is set on the fidelity the plan runs when plan.fidelity is
	// not set.
	Default bool   `json:"default,omitempty"`
	Note    string `json:"note,omitempty"`
}

// EstimateEngineTime counts what a plan of s would cost on its engine at
// each fidelity, by running the plan's control flow on the simulator of
// the configured deployment (seconds of CPU, no engine time) with every
// evaluation counted as the live run it stands for: its windows, the
// server starts a live plan makes (one per contiguous flag set) and
// RunOverhead. The engine's start-up time is plan.engine_startup, or
// measured by starting the engine once with the configured flags. The
// count follows the simulator's decisions: a live engine whose ceilings
// differ sweeps other levels, which is the estimate's error
// (docs/fidelity.md measures it).
func EstimateEngineTime(ctx context.Context, s Setup, o Options) (*Estimate, error) {
	simulator, err := s.simulator()
	if err != nil {
		return nil, err
	}
	overhead, overheadSource := s.Fidelity.runOverhead()
	est := &Estimate{RunOverheadSeconds: overhead.Seconds(), RunOverheadSource: overheadSource, BudgetSeconds: s.Fidelity.Budget.Seconds(), GPUs: s.Deployment.GPUs,
		Method: "the plan's control flow run on the simulator of the configured deployment, each run counted as its windows plus run overhead, each server start as the start-up time"}
	virtual := s.Virtual
	fixed := !engine.Reconfigurable(s.Launcher)
	switch {
	case virtual:
		est.StartupSource = "none: the simulator engine runs in virtual time"
	case fixed:
		est.StartupSource = "none: the external server is already running (spoc starts nothing and cannot change its flags, so the plan runs no study)"
	case s.Fidelity.Startup > 0:
		est.StartupSeconds, est.StartupSource = s.Fidelity.Startup.Seconds(), "configured (plan.engine_startup)"
	default:
		progressf(o.Progress, "estimate: plan.engine_startup is not set, so the %s engine is started once with the configured flags to time its start-up (the only engine time --estimate spends; set plan.engine_startup to skip it)", s.Deployment.Kind)
		t0 := time.Now()
		d, err := measureStartup(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("estimate: measure the engine's start-up (set plan.engine_startup to skip): %w", err)
		}
		est.StartupSeconds, est.StartupSource = d.Seconds(), "measured (one start of the engine with the configured flags)"
		progressf(o.Progress, "estimate: the engine answered after %.1fs and was stopped (%.1fs in all)", d.Seconds(), time.Since(t0).Seconds())
	}
	tmp, err := os.MkdirTemp("", "spoc-estimate-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	defaultMode, _ := ResolveFidelity("", s.Deployment.Kind, virtual, !fixed)
	live := -1 // the live row, which an external server's multi row copies
	for _, mode := range Fidelities {
		row := EstimateRow{Fidelity: mode, Default: mode == defaultMode}
		if virtual && mode != FidelitySimulated {
			row.Note = "the simulator engine: the same as simulated"
		}
		if mode == FidelitySimulated || virtual {
			row.Note = ifEmpty(row.Note, "no engine time: every phase in the simulator")
			est.Rows = append(est.Rows, row)
			continue
		}
		if fixed && mode == FidelityMulti && live >= 0 {
			// ResolveFidelity: multi on an external server is the live plan
			row = est.Rows[live]
			row.Fidelity, row.Default, row.Note = mode, mode == defaultMode, "an external server: the same as live (nothing to search in the simulator)"
			est.Rows = append(est.Rows, row)
			continue
		}
		progressf(o.Progress, "estimate %s: running the plan's control flow on the simulator, counting the live runs it stands for (seconds to minutes of CPU, no engine time)", mode)
		u, skippable, more, err := dryRun(ctx, s, o, simulator, mode, filepath.Join(tmp, mode))
		if err != nil {
			return nil, fmt.Errorf("estimate %s: %w", mode, err)
		}
		if fixed {
			// the simulator standing in for the server was started; the
			// server itself is not
			u.Starts, skippable.Starts = 0, 0
		}
		row.Runs, row.Starts, row.WindowSeconds = u.Runs, u.Starts, u.WindowSeconds
		cost := func(u capacity.WouldUse) float64 {
			return u.WindowSeconds + float64(u.Runs)*est.RunOverheadSeconds + float64(u.Starts)*est.StartupSeconds
		}
		row.EngineSeconds = cost(u)
		if more.Starts > 0 { // a refined sweep: the range's top
			more.Starts = 0
			row.MaxEngineSeconds = row.EngineSeconds + cost(more)
		}
		if skippable.Runs > 0 {
			row.IfNoFeasibleSeconds = row.EngineSeconds - cost(skippable)
			row.Note = ifEmpty(row.Note, fmt.Sprintf("%.0fs if the study finds no feasible trial (choose and default then run nothing)", row.IfNoFeasibleSeconds))
		}
		row.GPUHours = row.EngineSeconds * float64(max(s.Deployment.GPUs, 1)) / 3600
		sf := s
		sf.Fidelity.Startup = time.Duration(est.StartupSeconds * float64(time.Second))
		least, _ := minimumEngineTime(sf, mode)
		row.MinimumSeconds = least.Seconds()
		if mode == FidelityLive {
			live = len(est.Rows)
		}
		est.Rows = append(est.Rows, row)
	}
	return est, nil
}

func ifEmpty(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// dryRun runs the phases of a plan of mode on the simulator, counting the
// runs a live plan would make, those of them a live plan skips when its
// study finds no feasible trial (choose, default), and the runs its
// refined sweeps could still add (more: up to sweep.max_runs each, at the
// sweep's windows for the estimate's users). The study goes into dir,
// never into the plan's own storage.
func dryRun(ctx context.Context, s Setup, o Options, simulator *engine.Sim, mode, dir string) (total, skippable, more capacity.WouldUse, err error) {
	ds := s
	ds.Launcher, ds.Virtual = simulator, true
	ds.OutDir = dir
	ds.Search.Storage = "sqlite:" + filepath.Join(dir, "study.db")
	ds.Compare, ds.Trace = nil, Trace{}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return total, skippable, more, err
	}
	ev, err := capacity.NewEvaluator(ds.Setup, o.Logger)
	if err != nil {
		return total, skippable, more, err
	}
	// progress of a dry run is not the plan's: it is discarded
	p := &planner{s: ds, o: Options{Logger: o.Logger, Progress: io.Discard}, ev: ev, sum: &Summary{Fidelity: &FidelityReport{Mode: mode}}, dryRun: true,
		fixedFlags: !engine.Reconfigurable(s.Launcher)}
	steps := p.steps(ev)[1:6] // baseline … default
	if mode == FidelityMulti {
		if err := p.initMulti(); err != nil {
			return total, skippable, more, err
		}
		steps = p.multiSteps()[1:6] // probe … sweep
	}
	start := time.Now()
	for i, st := range steps {
		t0, before := time.Now(), ev.WouldUse()
		if _, err := st.fn(ctx); err != nil {
			return total, skippable, more, fmt.Errorf("%s: %w", st.name, err)
		}
		u := ev.WouldUse()
		if mode == FidelityLive && (st.name == "choose" || st.name == "default") {
			skippable.Runs += u.Runs - before.Runs
			skippable.Starts += u.Starts - before.Starts
			skippable.WindowSeconds += u.WindowSeconds - before.WindowSeconds
		}
		starts := words.Plural(u.Starts, "server start")
		if p.fixedFlags {
			starts = "no server start (the server is already running)" // EstimateEngineTime clears the simulator's
		}
		progressf(o.Progress, "estimate %s: phase %d/%d %-9s %4.1fs; counted so far %s, %s, %.0fs of windows (%.0fs elapsed)",
			mode, i+1, len(steps), st.name, time.Since(t0).Seconds(), words.Plural(u.Runs, "run"), starts, u.WindowSeconds, time.Since(start).Seconds())
	}
	// each refined sweep: its refinement and the users its runs go to
	type refinedSweep struct {
		r     *capacity.Refinement
		users int
	}
	at := func(e *capacity.CapacityEstimate, ceiling int) int {
		if e != nil {
			return int(e.Users)
		}
		return max(ceiling, 1)
	}
	c := p.sum.Capacity
	refined := []refinedSweep{{c.Refinement, at(c.Estimate, c.Ceiling)}}
	if tv := p.sum.TunedVsDefault; tv != nil && !tv.Same {
		other := tv.Default
		if tv.KeptDefault {
			other = tv.Tuned
		}
		refined = append(refined, refinedSweep{other.Refinement, at(other.Estimate, other.Users)})
	}
	for _, x := range refined {
		if x.r == nil {
			continue
		}
		// Starts counts the refined sweeps here (no server start is
		// added: a refinement reuses its sweep's server); the caller
		// clears it before pricing
		more.Starts++
		left := max(s.Sweep.Precision.MaxRuns-x.r.Runs, 0)
		l := s.Windows.Sweep.At(x.users)
		more.Runs += left
		more.WindowSeconds += float64(left) * (l.Ramp + l.Warmup + l.Duration).Seconds()
	}
	return ev.WouldUse(), skippable, more, nil
}

// progressf writes one progress line to w (nil: nowhere).
func progressf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

// measureStartup starts the engine once with the configured flags and
// times it until it answers a request.
func measureStartup(ctx context.Context, s Setup) (time.Duration, error) {
	start := time.Now()
	srv, err := s.Launcher.Start(ctx, engine.Params{})
	if err != nil {
		return 0, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = srv.Stop(sctx)
	}()
	ep := srv.Endpoint()
	if ep.Model == "" {
		ep.Model = s.Deployment.RequestModel()
	}
	if err := capacity.Preflight(ctx, ep, s.Client); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// WriteEstimate prints est as a table.
func WriteEstimate(w io.Writer, est *Estimate) error {
	fmt.Fprintf(w, "engine start-up %.1fs, %s; %.1fs per run beyond its windows, %s\n", est.StartupSeconds, est.StartupSource, est.RunOverheadSeconds, est.RunOverheadSource)
	fmt.Fprintf(w, "%-10s %5s %6s %10s %12s %11s %9s %10s\n", "fidelity", "runs", "starts", "windows", "engine-time", "at most", "GPU-h", "minimum")
	for _, r := range est.Rows {
		def := ""
		if r.Default {
			def = " (default)"
		}
		most := "–"
		if r.MaxEngineSeconds > 0 {
			most = fmt.Sprintf("%.0fs", r.MaxEngineSeconds)
		}
		fmt.Fprintf(w, "%-10s %5d %6d %9.0fs %11.0fs %11s %9.3f %9.0fs  %s%s\n", r.Fidelity, r.Runs, r.Starts, r.WindowSeconds, r.EngineSeconds, most, r.GPUHours, r.MinimumSeconds, r.Note, def)
	}
	if est.BudgetSeconds > 0 {
		fmt.Fprintf(w, "plan.budget %.0fs\n", est.BudgetSeconds)
	}
	fmt.Fprintf(w, "at most: the engine time when every refined sweep needs all sweep.max_runs runs to reach sweep.precision (engine-time is what the simulator's own noise needs)\n")
	fmt.Fprintf(w, "minimum: the least engine time the fidelity needs to start (the multi plan's probes, a live plan's first run); a plan.budget below it is refused\n")
	_, err := fmt.Fprintf(w, "method: %s\n", est.Method)
	return err
}
