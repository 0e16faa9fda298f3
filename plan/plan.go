package plan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/tune"
	"github.com/spoc-project/spoc/workload"
)

// Options configure Run.
type Options struct {
	// OutDir receives the study and the sweep's records (records/). Run
	// writes no report file there; report.WriteFiles does, from the Summary.
	OutDir string
	// Quick is a smoke run: fewer trials, shorter windows.
	Quick bool
	// Compare sweeps the chosen configuration on every engine.compare target
	// (4× H100 and 2× H200 when none are configured).
	Compare bool
	// Engine is the launcher every phase runs on (the simulator's launcher
	// runs in virtual time). It is required: a plan never substitutes the
	// simulator for a missing engine.
	Engine engine.Launcher
	// Progress receives one line per step of every phase.
	Progress io.Writer
	Logger   *slog.Logger
	// Version is recorded in the summary.
	Version string
}

// Quick settings: enough to exercise every phase in under half a minute.
const (
	quickTrials     = 12
	quickPopulation = 6
)

// ApplyQuick shortens cfg in place for a smoke run.
func ApplyQuick(cfg *config.Config) {
	cfg.Search.Trials = min(cfg.Search.Trials, quickTrials)
	cfg.Search.Population = min(cfg.Search.Population, quickPopulation)
	// Windows stay long enough for the cold prefill burst of mid-session
	// starts (every user's history is uncached on its first request) to
	// drain before measuring; in virtual time they cost little.
	cfg.Search.Warmup = config.Duration(90 * time.Second)
	cfg.Search.Duration = config.Duration(2 * time.Minute)
	cfg.Run.Ramp = config.Duration(60 * time.Second)
	cfg.Run.Warmup = config.Duration(90 * time.Second)
	cfg.Run.Duration = config.Duration(3 * time.Minute)
	cfg.Sweep.Duration, cfg.Sweep.Warmup = 0, 0
	cfg.Sweep.TopK = min(cfg.Sweep.TopK, 2)
	cfg.Sweep.ResolutionUsers = max(cfg.Sweep.ResolutionUsers, 10)
	cfg.Sweep.ResolutionFraction = max(cfg.Sweep.ResolutionFraction, 0.05)
}

// planner carries one Run's state.
type planner struct {
	// cfg is the resolved configuration the phases read and hand to
	// capacity, tune and workload. TODO(setup): becomes the resolved Setup.
	cfg *config.Config
	o   Options
	ev  *capacity.Evaluator
	// targets are the hardware targets of the compare phase (none: not
	// requested).
	targets []config.Target
	sum     *Summary
	// baseline is the configured engine flags' short sweep.
	baseline *capacity.SweepResult
}

func (p *planner) logf(format string, args ...any) {
	if p.o.Progress != nil {
		fmt.Fprintf(p.o.Progress, format+"\n", args...)
	}
}

func (p *planner) phase(name string, fn func() (string, error)) error {
	p.logf("== %s", name)
	start := time.Now()
	detail, err := fn()
	secs := time.Since(start).Seconds()
	p.sum.Phases = append(p.sum.Phases, Phase{Name: name, Seconds: secs, Detail: detail})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	p.logf("   %s done in %.1fs%s", name, secs, ifNotEmpty(": ", detail))
	return nil
}

func ifNotEmpty(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// Run runs the whole methodology: inspect the workload, sweep the configured
// engine flags as a baseline, tune the flags, choose a configuration from the
// Pareto front by short sweeps, sweep it to the capacity ceiling, analyse a
// trace when one is configured and compare hardware when asked. The study
// and the sweep's records go into o.OutDir; the answer is the returned
// Summary, which Run does not write (report.WriteFiles does). A plan that
// fails in any phase returns no Summary: a partial one would state a
// capacity that was never established.
func Run(ctx context.Context, cfg *config.Config, o Options) (*Summary, error) {
	if o.OutDir == "" {
		return nil, errors.New("plan: no output folder")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	// TODO(setup): the only place Run resolves the configuration; a Setup
	// resolved by the CLI from config and flags replaces this block.
	if o.Quick {
		ApplyQuick(cfg)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkInputs(cfg); err != nil {
		return nil, err
	}
	cfg.Search.Storage = cfg.Search.StorageIn(o.OutDir)
	var targets []config.Target
	if o.Compare || len(cfg.Engine.Compare) > 0 {
		targets = cfg.Engine.Compare
		if len(targets) == 0 {
			targets = []config.Target{
				{Name: "4x H100", GPU: "H100-SXM", GPUs: 4, TensorParallelSize: 4},
				{Name: "2x H200", GPU: "H200-SXM", GPUs: 2, TensorParallelSize: 2},
			}
		}
	}
	sum := &Summary{
		Title: cfg.Report.Title, Generated: time.Now().UTC(), SpocVersion: o.Version, Quick: o.Quick,
		Engine: Engine{Kind: cfg.Engine.Kind, Model: cfg.Engine.Model, GPU: cfg.Engine.GPU, GPUs: cfg.Engine.GPUs,
			TensorParallelSize: cfg.Engine.TensorParallelSize, WeightFormat: cfg.Engine.WeightFormat, MaxModelLen: cfg.Engine.MaxModelLen},
		SLA: cfg.SLA.Result(),
	}
	for _, a := range config.Assumptions(cfg) {
		sum.Assumptions = append(sum.Assumptions, Assumption{Field: a.Path, Value: a.Value, Note: a.Note})
	}
	if cfg.Engine.Kind == config.EngineSim {
		sum.Engine.Calibration = simCalibration(cfg)
	}

	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	ev, err := capacity.NewEvaluator(cfg, o.Engine, o.Logger)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := ev.Close(ctx); cerr != nil {
			o.Logger.Warn("stop engine at the end of the plan", "err", cerr)
		}
	}()
	p := &planner{cfg: cfg, o: o, ev: ev, targets: targets, sum: sum}
	steps := []struct {
		name string
		fn   func(context.Context) (string, error)
	}{
		{"workload", p.inspect},
		{"baseline", p.baselineSweep},
		{"tune", p.tune},
		{"choose", p.choose},
		{"sweep", p.sweep},
		{"trace", p.trace},
		{"compare", p.compare},
	}
	for _, s := range steps {
		if err := p.phase(s.name, func() (string, error) { return s.fn(ctx) }); err != nil {
			return nil, err
		}
	}
	return p.sum, nil
}

// checkInputs fails before the first phase when a file the plan reads in a
// later phase is missing, rather than after minutes of tuning.
func checkInputs(cfg *config.Config) error {
	errs := &config.Errors{}
	for _, f := range []struct{ field, path string }{
		{"trace.file", cfg.Trace.File}, {"trace.rules", cfg.Trace.Rules},
		{"engine.sim.calibration", cfg.Engine.Sim.Calibration}, {"engine.gpu_catalog", cfg.Engine.GPUCatalog},
		{"workload.corpus", cfg.Workload.Corpus},
	} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			errs.Addf(f.field, "%v", err)
		}
	}
	return errs.Err()
}

// simCalibration names the cost-model factors the simulator uses and their
// validation error, so a reader knows how far to trust simulated numbers.
func simCalibration(cfg *config.Config) string {
	if cfg.Engine.Sim.Calibration != "" {
		return "calibration file " + cfg.Engine.Sim.Calibration
	}
	dep, err := sim.NewDeployment(cfg.Engine.SimDeployment())
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	c, ok := perfmodel.CalibrationFor(dep.Model)
	if !ok {
		return "uncalibrated first-principles factors (no measurements for " + dep.Model.Name + ")"
	}
	keys := make([]string, 0, len(c.MAPE))
	for k := range c.MAPE {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	errs := make([]string, len(keys))
	for i, k := range keys {
		errs[i] = fmt.Sprintf("%s %.1f%%", k, c.MAPE[k])
	}
	return fmt.Sprintf("built-in %s calibration (%s, fitted %s on %s); validation MAPE: %s",
		c.Family, c.Engine, c.Date, c.Source, strings.Join(errs, ", "))
}

func (p *planner) inspect(ctx context.Context) (string, error) {
	n := 2000
	if p.o.Quick {
		n = 500
	}
	// Inspect the workload as generated: mid-session starts would show
	// joined sessions' contexts as start contexts.
	src, err := workload.Open(p.cfg.Workload, p.cfg.Engine.MaxModelLen)
	if err != nil {
		return "", err
	}
	insp, err := workload.Inspect(ctx, src, workload.InspectOptions{Sessions: n, Seed: p.cfg.Workload.Seed})
	if err != nil {
		return "", err
	}
	p.sum.Workload = insp
	parts := make([]string, 0, len(insp.Profiles))
	for _, pr := range insp.Profiles {
		parts = append(parts, fmt.Sprintf("%s %.0f%% start p50 %d", pr.Name, 100*pr.Share, pr.ContextStartP50))
	}
	return fmt.Sprintf("%d sessions; %s; ideal prefix-cache hit rate %.1f%%", insp.Sessions, strings.Join(parts, ", "), 100*insp.Prefix.IdealHitRate), nil
}

// baselineSweep gives the configured engine flags a short sweep. Its
// ceiling is the baseline every tuned candidate must beat and, when
// search.users is 0 (auto), the load the study tunes at: there the SLA
// binds, so the front separates configurations that serve more users from
// those that serve fewer.
func (p *planner) baselineSweep(ctx context.Context) (string, error) {
	res, err := capacity.BaselineSweep(ctx, p.ev)
	if err != nil {
		return "", err
	}
	p.baseline = res
	msg := fmt.Sprintf("engine.params ceiling %d users (short windows)", res.Ceiling)
	if p.cfg.Search.Users == 0 {
		p.cfg.Search.Users = max(res.Ceiling, 1)
		msg += fmt.Sprintf("; the study tunes at %d users", p.cfg.Search.Users)
	}
	return msg, nil
}

func (p *planner) tune(ctx context.Context) (string, error) {
	cfg := p.cfg
	p.logf("   study %q in %s: %d trials of %d users, %s each", cfg.Search.Study, cfg.Search.Storage, cfg.Search.Trials, cfg.Search.Users, cfg.Search.Duration)
	res, err := tune.Run(ctx, capacity.TuneSpec(cfg), tune.Options{
		Launcher: p.ev.Launcher(), Evaluate: p.ev.TuneEvaluator(), Capacity: p.ev.CapacityFunc(), Logger: p.o.Logger,
		Progress: func(pr tune.Progress) {
			if p.o.Progress != nil {
				fmt.Fprint(p.o.Progress, "   ")
				_ = tune.WriteProgress(p.o.Progress, pr)
			}
		},
	})
	if err != nil {
		return "", err
	}
	p.sum.Search = searchSection(cfg, res)
	p.sum.Trials = len(res.Trials)
	for _, m := range p.sum.Search.Trials {
		if m.OnFront {
			p.sum.Pareto = append(p.sum.Pareto, m)
		}
	}
	return fmt.Sprintf("%d trials (%d complete, %d infeasible, %d failed), %d on the feasible front",
		len(res.Trials), p.sum.Search.Complete, p.sum.Search.Infeasible, p.sum.Search.Failed, len(p.sum.Pareto)), nil
}
