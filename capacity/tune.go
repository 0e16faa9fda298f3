package capacity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/tune"
)

// TuneEvaluator adapts the evaluator to package tune: each trial runs at
// load on the evaluator's engine (virtual time for the simulator),
// keeps records and telemetry in the trial's artefact folder when the study
// has one, and stores the numbers a report needs as trial attributes.
func (e *Evaluator) TuneEvaluator(load Load) tune.Evaluator {
	return func(ctx context.Context, t *search.TrialContext) (*result.Result, error) {
		out, closeOut, err := trialOutputs(t)
		if err != nil {
			return nil, err
		}
		ev, err := e.Evaluate(ctx, map[string]any(t.Params), load, out)
		if cerr := closeOut(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		recordAttrs(t, ev)
		return ev.Summary, nil
	}
}

// tuneWorkers returns the evaluators of a study that runs n trials at once
// (search.parallel) and the function that closes them. On the simulator
// every worker evaluates on e (virtual runs start no server and run
// side by side); on a live engine worker 1 is e and each other worker a
// fork of e with a server of its own (the launcher must run n at once:
// kubernetes, one Deployment per trial), whose engine usage Close adds to
// e's.
func (e *Evaluator) tuneWorkers(load Load, n int) ([]tune.Worker, func(context.Context) error) {
	evs := []*Evaluator{e}
	for i := 1; i < max(n, 1); i++ {
		if e.Virtual() {
			evs = append(evs, e)
			continue
		}
		fork := &Evaluator{setup: e.setup, gen: e.gen, launcher: e.launcher, virtual: e.virtual, logger: e.logger, parent: e}
		fork.watch.Store(e.watch.Load()) // its runs show as e's do
		evs = append(evs, fork)
	}
	ws := make([]tune.Worker, len(evs))
	for i, ev := range evs {
		ws[i] = tune.Worker{Evaluate: ev.TuneEvaluator(load), Capacity: ev.CapacityFunc()}
	}
	return ws, func(ctx context.Context) error {
		var errs []error
		for _, ev := range evs[1:] {
			if ev != e {
				errs = append(errs, ev.Close(ctx))
			}
		}
		return errors.Join(errs...)
	}
}

// CapacityFunc adapts a sweep to package tune's "capacity" objective: the
// sweep's windows and warm-up, so that trials are ranked by the ceiling the
// sweep will confirm (the tuning windows were optimistic: 175 users against
// the sweep's 156 for the configured flags on the reference case), at a
// coarse resolution (max(10 users, 10 %)) and one seed to bound each
// trial's cost.
func (e *Evaluator) CapacityFunc() tune.CapacityFunc {
	return func(ctx context.Context, t *search.TrialContext) (int, error) {
		sw := e.setup.Sweep
		opts := SweepOptions{Grid: sw.Grid, Start: sw.Start, Max: sw.Max, ResolutionUsers: max(sw.ResolutionUsers, 10),
			ResolutionFraction: max(sw.ResolutionFraction, 0.1), Repeats: 1}
		res, err := SweepConfig(ctx, e, map[string]any(t.Params), e.setup.Windows.Sweep.At, opts, nil)
		if err != nil {
			return 0, err
		}
		return res.Ceiling, nil
	}
}

// trialOutputs opens records.jsonl and telemetry.jsonl in the trial's
// artefact directory when the study keeps artefacts.
func trialOutputs(tc *search.TrialContext) (Outputs, func() error, error) {
	if tc == nil || tc.Artifacts == "" {
		return Outputs{}, func() error { return nil }, nil
	}
	if err := os.MkdirAll(tc.Artifacts, 0o755); err != nil {
		return Outputs{}, nil, fmt.Errorf("trial artefacts: %w", err)
	}
	rec, err := os.Create(filepath.Join(tc.Artifacts, "records.jsonl"))
	if err != nil {
		return Outputs{}, nil, fmt.Errorf("trial artefacts: %w", err)
	}
	tel, err := os.Create(filepath.Join(tc.Artifacts, "telemetry.jsonl"))
	if err != nil {
		rec.Close()
		return Outputs{}, nil, fmt.Errorf("trial artefacts: %w", err)
	}
	return Outputs{Records: rec, Telemetry: tel}, func() error {
		return errors.Join(rec.Close(), tel.Close())
	}, nil
}

// recordAttrs keeps the numbers a report needs with the trial.
func recordAttrs(tc *search.TrialContext, ev *Evaluation) {
	o := ev.Summary.Overall
	tc.SetUserAttr("sla", ev.Verdict.String())
	tc.SetUserAttr("error_rate", o.ErrorRate)
	tc.SetUserAttr(AttrProvenance, ev.Provenance)
	if ev.Sim != nil {
		tc.SetUserAttr("kv_cache_usage_mean", ev.Sim.MeanKVUsage)
		tc.SetUserAttr("prefix_cache_hit_rate", ev.Sim.PrefixHitRate)
		tc.SetUserAttr("sm_active_mean", ev.Sim.MeanSMActive)
		tc.SetUserAttr("preemptions", ev.Sim.Preemptions)
	}
}

// TuneOptions configure Tune.
type TuneOptions struct {
	// ArtifactsRoot keeps one folder per trial (records, telemetry);
	// empty keeps none.
	ArtifactsRoot string
	// Progress receives every finished trial.
	Progress func(tune.Progress)
	// Notify receives one line per decision Tune takes on its own (the
	// tuning load when search.users is automatic).
	Notify func(string)
	// BaselineLevel, when set, is called after every level of the baseline
	// sweep that finds the tuning load (search.users 0, a new study).
	BaselineLevel func(l Level, phase string)
	// Runs, when set, receives each live run's status about once a second
	// (Evaluator.WatchRuns): a trial of minutes shows progress.
	Runs   func(RunStatus)
	Logger *slog.Logger
}

// Tune runs the study of s.Search on s's engine: the `spoc tune` use case.
// The engine must apply each trial's flags (not an external server) and
// pass its own check. When s.Search.Users is 0 the study runs at the load
// its trials already ran at (a resumed study) or, for a new study, at the
// ceiling of the configured flags found by a baseline sweep with the
// sweep's windows. It
// returns the study's state, also with the error of an interrupted run.
func Tune(ctx context.Context, s Setup, o TuneOptions) (*tune.Result, error) {
	if !engine.Reconfigurable(s.Launcher) {
		return nil, ErrNotReconfigurable
	}
	if err := engine.Check(s.Launcher); err != nil {
		return nil, err
	}
	notify := o.Notify
	if notify == nil {
		notify = func(string) {}
	}
	ev, err := NewEvaluator(s, o.Logger)
	if err != nil {
		return nil, err
	}
	defer ev.Close(ctx)
	if o.Runs != nil {
		ev.WatchRuns(o.Runs)
	}
	spec := s.Search
	if spec.Users == 0 {
		users, err := tune.StudyUsers(ctx, spec.Storage, spec.Study)
		if err != nil {
			return nil, err
		}
		if users > 0 {
			notify(fmt.Sprintf("search.users auto: study %q runs at %d users", spec.Study, users))
		} else {
			notify("search.users auto: finding the ceiling of engine.params with a baseline sweep (the sweep's windows, one seed) ...")
			res, err := BaselineSweep(ctx, ev, o.BaselineLevel)
			if err != nil {
				return nil, fmt.Errorf("baseline sweep: %w", err)
			}
			users = res.AimUsers()
			notify(fmt.Sprintf("search.users auto: engine.params serve %d users within the SLA; the study tunes at %d users", res.Ceiling, users))
		}
		spec.Users = users
	}
	line := fmt.Sprintf("study %q in %s: %d trials, %s engine, %d users per trial", spec.Study, spec.Storage, spec.Trials, s.Deployment.Kind, spec.Users)
	if spec.Parallel > 1 {
		line += fmt.Sprintf(", %d at once", spec.Parallel)
	}
	notify(line)
	o.Notify = notify
	return ev.Study(ctx, spec, o)
}

// Study runs the study spec on e's engine at spec.Users with the tuning
// windows: each trial running at once (spec.Parallel) on an evaluator of
// its own, its artefacts under o.ArtifactsRoot, its progress and the
// study's decisions to o.Progress and o.Notify (o's BaselineLevel and Runs
// are Tune's). It is the one place a study is wired to spoc's evaluations:
// spoc tune (Tune) and a plan's tune phase call it. It returns the study's
// state, also with the error of an interrupted run, and
// ErrEveryTrialFailed when every trial failed.
func (e *Evaluator) Study(ctx context.Context, spec tune.Spec, o TuneOptions) (*tune.Result, error) {
	workers, closeWorkers := e.tuneWorkers(e.setup.Windows.Tune.At(spec.Users), spec.Parallel)
	defer func() {
		if err := closeWorkers(ctx); err != nil {
			e.logger.Warn("stop a parallel worker's server", "err", err)
		}
	}()
	res, err := tune.Run(ctx, spec, tune.Options{
		Launcher:      e.launcher,
		Workers:       workers,
		ArtifactsRoot: o.ArtifactsRoot,
		Progress:      o.Progress,
		Logger:        o.Logger,
		Notify:        o.Notify,
	})
	if err == nil {
		err = NoTrialRan(res)
	}
	return res, err
}

// AttrProvenance is the trial attribute holding the Provenance of the
// trial's evaluation.
const AttrProvenance = "provenance"

// ErrEveryTrialFailed: no trial of the study completed or was found
// infeasible; every one failed (the engine never served, say). The study
// has no result to report.
var ErrEveryTrialFailed = errors.New("every trial failed")

// NoTrialRan returns ErrEveryTrialFailed, with the first trial's reason,
// when the study holds trials and every one of them failed; nil otherwise.
func NoTrialRan(res *tune.Result) error {
	if res == nil || len(res.Trials) == 0 || res.States[search.StateFail] != len(res.Trials) {
		return nil
	}
	reason := "no reason recorded"
	for _, t := range res.Trials {
		if r, ok := t.UserAttrs["error"].(string); ok && r != "" {
			reason = r
			break
		}
	}
	return fmt.Errorf("study %q: %w (%d of %d); trial %d: %s", res.Study, ErrEveryTrialFailed, len(res.Trials), len(res.Trials), res.Trials[0].Number, reason)
}

// ErrNotReconfigurable: a study needs an engine it can restart with each
// trial's flags (sim, process or kubernetes), not an external server.
var ErrNotReconfigurable = errors.New("a study needs an engine it can restart with each trial's flags (sim, process or kubernetes), not external")
