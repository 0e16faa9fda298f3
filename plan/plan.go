package plan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/workload"
)

// Options configure Run.
type Options struct {
	// Events, when set, receives the plan's progress as events, for a
	// renderer (spoc plan's adds elapsed time and ETAs).
	Events func(Event)
	// Progress, when Events is nil, receives the same events as plain
	// lines (Event.String).
	Progress io.Writer
	Logger   *slog.Logger
	// Version is recorded in the summary.
	Version string
}

// planner carries one Run's state.
type planner struct {
	// s is the resolved plan; no phase changes it.
	s Setup
	o Options
	// ev is the plan's evaluator, on the Setup's launcher: every phase of
	// a live or simulated plan and the live phases of a multi plan run on it
	ev  *capacity.Evaluator
	sum *Summary
	// final is the chosen configuration's sweep: the default phase
	// compares it with the search's baseline.
	final *capacity.SweepResult
	// m is the multi-fidelity plan's state (multi.go); nil otherwise.
	m *multiState
	// dryRun marks a plan run on the simulator to count what it would
	// cost live (estimate.go): phases decide as on a live engine.
	dryRun bool
	// fixedFlags marks a dry run counting for an external server: the
	// simulator standing in for it could take each trial's flags, the
	// server cannot, so the plan decides as on the server.
	fixedFlags bool
	// the phase running, for progress events
	phaseName          string
	phaseIndex, phases int
}

// phaseStep is one phase of a plan.
type phaseStep struct {
	name string
	fn   func(context.Context) (string, error)
}

// steps are the phases of a live or simulated plan, all on ev.
func (p *planner) steps(ev *capacity.Evaluator) []phaseStep {
	st := p.newSearch(p.s.Search.Study)
	return []phaseStep{
		{"workload", p.inspect},
		{"baseline", func(ctx context.Context) (string, error) { return p.baselineSweep(ctx, ev, st) }},
		{"tune", func(ctx context.Context) (string, error) { return p.tune(ctx, ev, st) }},
		{"choose", func(ctx context.Context) (string, error) { return p.choose(ctx, ev, st) }},
		{"sweep", func(ctx context.Context) (string, error) {
			opts, err := p.measureOnce(ev, st, p.s.Sweep.SweepOptions)
			if err != nil {
				return "", err
			}
			return p.sweep(ctx, ev, opts)
		}},
		{"default", func(ctx context.Context) (string, error) { return p.tunedVsDefault(ctx, ev, st) }},
		{"trace", p.trace},
		{"compare", p.compare},
	}
}

func (p *planner) phase(name string, fn func() (string, error)) error {
	p.phaseName, p.phaseIndex = name, p.phaseIndex+1
	p.emit(Event{Kind: PhaseStarted})
	start, before := time.Now(), p.ev.Usage()
	detail, err := fn()
	secs, after := time.Since(start).Seconds(), p.ev.Usage()
	p.sum.Phases = append(p.sum.Phases, Phase{Name: name, Seconds: secs, Detail: detail,
		EngineSeconds: after.Seconds - before.Seconds, EngineStarts: after.Starts - before.Starts})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	text := detail
	ran := after.Starts > before.Starts || after.Resets > before.Resets || after.WarmRuns > before.WarmRuns // a run: on a new server, or on a reused one
	if n := after.WarmRuns - before.WarmRuns; n > 0 {
		p.sum.Notes = append(p.sum.Notes, fmt.Sprintf("Warm prefix cache in the %s phase: %d runs started with the cache the previous run on the same server left, because the server refused the reset (POST /reset_prefix_cache answered 404: vLLM serves it only with VLLM_SERVER_DEV_MODE=1). Their prompts could hit the earlier run's cached prefixes, so their TTFT and throughput may read better than a cold start's; the sweep table marks such levels \"warm cache\" (docs/fidelity.md).", name, n))
	}
	if !p.ev.Virtual() && ran && !strings.Contains(text, "engine time so far") {
		// a live plan's running count of what it has spent (multi's
		// phases say it in their detail already); the seconds grow in a
		// phase that ran nothing (the last server stays up), so a run
		// decides
		if text != "" {
			text += "; "
		}
		text += p.engineSoFar()
	}
	p.emit(Event{Kind: PhaseDone, Text: text, Elapsed: time.Since(start)})
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
// and the sweep's records go into s.OutDir; the answer is the returned
// Summary, which Run does not write (report renders it; the CLI writes the
// files). A plan that fails in any phase returns no Summary: a partial one
// would state a capacity that was never established.
func Run(ctx context.Context, s Setup, o Options) (*Summary, error) {
	if s.OutDir == "" {
		return nil, errors.New("plan: no output folder")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	d := s.Deployment
	sum := &Summary{
		Title: s.Title, Generated: time.Now().UTC(), SpocVersion: o.Version, Quick: s.Quick,
		Engine: Engine{Kind: d.Kind, Model: d.Model, GPU: d.GPU, GPUs: d.GPUs,
			TensorParallelSize: d.TensorParallelSize, WeightFormat: d.WeightFormat, MaxModelLen: d.MaxModelLen},
		SLA:         s.SLA,
		Assumptions: s.Assumptions,
	}
	if err := prepareFidelity(s, sum); err != nil {
		return nil, err
	}
	if s.Virtual {
		sum.Engine.Calibration = simCalibration(s)
	}

	if err := engine.Check(s.Launcher); err != nil {
		return nil, err
	}
	if err := checkFleetLauncher(s); err != nil {
		return nil, err
	}
	if err := checkWritable(s.OutDir); err != nil {
		return nil, err
	}
	if err := checkRecordsOwned(s.OutDir); err != nil {
		return nil, err
	}
	ev, err := capacity.NewEvaluator(s.Setup, o.Logger)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := ev.Close(ctx); cerr != nil {
			o.Logger.Warn("stop engine at the end of the plan", "err", cerr)
		}
	}()
	p := &planner{s: s, o: o, ev: ev, sum: sum}
	p.watchRuns(ev)
	steps := p.steps(ev)
	if s.Fidelity.Mode == FidelityMulti {
		if err := p.initMulti(); err != nil {
			return nil, err
		}
		steps = p.multiSteps()
	}
	if len(s.Demand.PeakShares) > 0 && s.Demand.Users > 0 {
		// last: it closes the plan's evaluator (one live server at a time)
		steps = append(steps, phaseStep{"peak", p.peak})
	}
	if s.Day != nil {
		// in the simulator, from the ceiling the sweep found: a phase
		// of its own, numbered and timed like the others
		steps = append(steps, phaseStep{"day", p.simulateDay})
	}
	// The sweep's records go to a staging folder that replaces records/
	// only when every phase succeeded: an interrupted or failed plan leaves
	// the previous plan's records beside its report.
	staging := filepath.Join(s.OutDir, stagingRecords)
	// a plan killed outright may have left one: none of its files belongs
	// to this plan
	if err := os.RemoveAll(staging); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	defer os.RemoveAll(staging)
	p.phases = len(steps)
	for _, s := range steps {
		if err := p.phase(s.name, func() (string, error) { return s.fn(ctx) }); err != nil {
			return nil, err
		}
	}
	finishFidelity(p.sum, s.Deployment.GPUs)
	autoAssumptions(p.sum, s)
	if sum.Engine.Calibration != "" {
		env, note := checkEnvelope(s, p.sum)
		p.sum.Envelope = env
		if note != "" {
			p.sum.Notes = append(p.sum.Notes, note)
		}
		if w := env.EnvelopeWarning(); w != "" {
			o.Logger.Warn(w)
			p.sum.Notes = append(p.sum.Notes, w)
		}
	}
	// the cost section reads only what the phases found
	var note string
	if p.sum.Cost, note = ServingCost(p.sum, s.Demand); note != "" {
		p.sum.Notes = append(p.sum.Notes, note)
	}
	markExtrapolation(p.sum)
	if err := p.sizeFleet(ctx); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	if err := swapRecords(staging, filepath.Join(s.OutDir, RecordsDir)); err != nil {
		return nil, err
	}
	if p.m != nil {
		// the live runs the correction was fitted to, for spoc sim
		// calibrate --records
		if err := p.m.writeManifest(s.OutDir); err != nil {
			return nil, fmt.Errorf("plan: %w", err)
		}
	}
	return p.sum, nil
}

// autoAssumptions replaces the value of an assumption spoc resolved itself
// (search.users: 0, "tune at the baseline's ceiling") with the value the
// plan used, marked automatic: the configured 0 is no load anyone tuned at.
func autoAssumptions(sum *Summary, s Setup) {
	if s.Search.Users != 0 || sum.Search == nil || sum.Search.Users <= 0 {
		return
	}
	for i, a := range sum.Assumptions {
		if a.Field == "search.users" {
			sum.Assumptions[i].Value = fmt.Sprint(sum.Search.Users)
			sum.Assumptions[i].Automatic = "set automatically: the configuration says 0, so the study tuned at the baseline's ceiling"
		}
	}
}

// stagingRecords is the folder under OutDir the sweep writes its records
// into until the plan has succeeded.
const stagingRecords = ".records-partial"

// checkWritable creates dir and fails now, not after hours of tuning, when
// spoc cannot write there.
func checkWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("plan: output folder: %w", err)
	}
	f, err := os.CreateTemp(dir, ".spoc-write-check-*")
	if err != nil {
		return fmt.Errorf("plan: output folder %s is not writable: %w", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// simCalibration names the cost-model factors the simulator uses and their
// validation error, so a reader knows how far to trust simulated numbers.
func simCalibration(s Setup) string {
	if s.CalibrationFile != "" {
		return "calibration file " + s.CalibrationFile
	}
	if err := s.Deployment.SimErr; err != nil {
		return "unknown (" + err.Error() + ")"
	}
	dep := s.Deployment.Sim
	c, ok := perfmodel.CalibrationFor(dep.Model)
	if !ok {
		return "uncalibrated first-principles factors (no measurements for " + dep.Model.Name + ")"
	}
	// The error to quote is the out-of-sample one: each GPU predicted by a
	// fit that did not see it (docs/calibration.md).
	errs := make([]string, 0, len(c.OutOfSample))
	for _, h := range c.OutOfSample {
		errs = append(errs, fmt.Sprintf("%s predicted unseen: throughput/GPU %.1f%%, median TPOT %.1f%%",
			h.GPU, h.MAPE["output_throughput_per_gpu"], h.MAPE["median_tpot"]))
	}
	if len(errs) == 0 {
		return fmt.Sprintf("built-in %s calibration (%s, fitted %s on %s); no out-of-sample error stated",
			c.Family, c.Engine, c.Date, c.Source)
	}
	return fmt.Sprintf("built-in %s calibration (%s, fitted %s on %s); leave-one-GPU-out MAPE: %s",
		c.Family, c.Engine, c.Date, c.Source, strings.Join(errs, "; "))
}

func (p *planner) inspect(ctx context.Context) (string, error) {
	n := 2000
	if p.s.Quick {
		n = 500
	}
	// Inspect the workload as generated: mid-session starts would show
	// joined sessions' contexts as start contexts.
	src, err := workload.Open(p.s.Workload, p.s.Deployment.MaxModelLen)
	if err != nil {
		return "", err
	}
	insp, err := workload.Inspect(ctx, src, workload.InspectOptions{Sessions: n, Seed: p.s.Workload.Seed})
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
