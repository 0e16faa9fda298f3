package tune

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/study"
)

// Evaluator measures one trial's configuration (t.Params) at the study's
// load on the study's engine and returns the run's summary. Errors that
// wrap search.ErrInfeasible (a server out of memory, say) make the trial
// INFEASIBLE; others make it FAIL. spoc's is
// capacity.Evaluator.TuneEvaluator, which also owns the servers; its
// evaluations already say an engine failure caused by the flags
// (engine.ErrInfeasible) in search's terms (capacity.Evaluator.Evaluate is
// the one place that translates).
type Evaluator func(ctx context.Context, t *search.TrialContext) (*result.Result, error)

// CapacityFunc finds the largest user count t.Params serve within the SLA
// (a short inner sweep); it is needed when "capacity" is an objective.
type CapacityFunc func(ctx context.Context, t *search.TrialContext) (users int, err error)

// Worker is what evaluates the trials of one of the study's workers in
// this process: its own Evaluate and Capacity, so that trials running at
// once each own their server.
type Worker struct {
	Evaluate Evaluator
	Capacity CapacityFunc
}

// Options are the run-time pieces of a study; what to search comes from
// the Spec.
type Options struct {
	// Launcher is the study's engine; a study needs one that applies the
	// trial's flags (not an external server).
	Launcher engine.Launcher
	// Evaluate and Capacity evaluate the trials of a study that runs one
	// at a time.
	Evaluate Evaluator
	Capacity CapacityFunc
	// Workers, when set, replace Evaluate and Capacity: Run runs one
	// study worker per entry, each claiming and evaluating trials on its
	// own. A study with Spec.Parallel N > 1 needs exactly N
	// (capacity.Evaluator.Study); each needs a server of its own,
	// so the Launcher must run N at once.
	Workers []Worker
	// ArtifactsRoot holds one directory per trial (server log, records):
	// ArtifactsRoot/<study>/trial-NNNNN.
	ArtifactsRoot string
	// Worker names this worker in a shared study (default host-pid-random).
	Worker string
	// Progress is called after every trial this process finishes, one
	// call at a time even when trials run in parallel.
	Progress func(Progress)
	Logger   *slog.Logger
	// HeartbeatInterval overrides study.DefaultHeartbeatInterval (tests).
	HeartbeatInterval time.Duration
	// Notify receives the study's decisions before its first trial: the
	// dimensions dropped from the space and why, the seeds tried first.
	// Without it they go to Logger.
	Notify func(string)
}

func (o Options) notify(line string) {
	if o.Notify != nil {
		o.Notify(line)
		return
	}
	if o.Logger != nil {
		o.Logger.Info(line)
	}
}

// Progress reports one finished trial and the study's standing after it.
type Progress struct {
	Trial search.Trial
	// Finished trials of Total (the study's budget, all workers together).
	Finished, Total int
	// FrontSize is the number of trials on the feasible Pareto front.
	FrontSize int
	// Best is the feasible COMPLETE trial best on the first objective, or
	// nil while there is none.
	Best       *search.Trial
	Objectives []search.ObjectiveSpec
}

// Result is a study's state when Run returns.
type Result struct {
	Study string `json:"study"`
	// Sampler is the sampler the study runs (auto resolved).
	Sampler    string                    `json:"sampler"`
	Storage    string                    `json:"storage"`
	Objectives []search.ObjectiveSpec    `json:"objectives"`
	Run        study.Result              `json:"run"`
	Trials     []search.Trial            `json:"trials"`
	Front      []search.Trial            `json:"front"`
	Directions []search.Direction        `json:"directions"`
	States     map[search.TrialState]int `json:"states"`
}

// Run creates or resumes the study spec.Study in spec.Storage and runs
// trials until the budget (spec.Trials) is spent or ctx ends.
// With Spec.Parallel N it runs N trials at once, one per Options.Workers
// entry. On Ctrl-C the trials in flight are re-queued, their servers
// stopped, and Run returns ctx's error with the study's state; running it
// again continues.
func Run(ctx context.Context, spec Spec, o Options) (*Result, error) {
	workers, err := o.workers(spec)
	if err != nil {
		return nil, err
	}
	if !engine.Reconfigurable(o.Launcher) {
		return nil, errors.New("tune: the external engine cannot apply trial parameters; use kind sim, process or kubernetes")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if spec.Users < 1 {
		return nil, fmt.Errorf("tune: search.users is %d; resolve the automatic tuning load (a baseline sweep) before the study", spec.Users)
	}
	db, err := study.Open(ctx, spec.Storage)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	// An automatic sampler choice is made once, when the study starts: a
	// resumed study keeps its sampler even if its budget was raised.
	stored := ""
	if prev, err := db.Load(ctx, spec.Study); err == nil {
		stored = prev.Sampler
	} else if !errors.Is(err, study.ErrNotFound) {
		return nil, err
	}
	spec.Sampler = ResolveSampler(spec, stored)
	plan, err := NewPlan(spec)
	if err != nil {
		return nil, err
	}
	if slices.ContainsFunc(plan.Objectives, func(ob search.ObjectiveSpec) bool { return ob.Metric == MetricCapacity }) &&
		slices.ContainsFunc(workers, func(w Worker) bool { return w.Capacity == nil }) {
		return nil, errors.New("tune: objective capacity needs a capacity search (CapacityFunc)")
	}
	st, err := db.CreateOrLoad(ctx, study.Config{
		Name: spec.Study, Directions: plan.Directions, Space: plan.Space,
		Sampler: spec.Sampler, SamplerConfig: SamplerConfig(spec), Seed: spec.Seed,
	})
	if err != nil {
		return nil, err
	}
	if err := checkFingerprint(ctx, st, spec.Fingerprint); err != nil {
		return nil, err
	}
	if err := checkUsers(ctx, st, spec.Users); err != nil {
		return nil, err
	}
	seedParams := make([]search.Params, len(plan.Seeds))
	for i, sd := range plan.Seeds {
		seedParams[i] = sd.Params
	}
	queued, err := st.EnqueueFirst(ctx, seedParams)
	if err != nil {
		return nil, err
	}
	if queued != nil || len(plan.Dropped) > 0 {
		// A new study (or a pruned space) says what it will not search and
		// what it tries first; a resumed one said it when it started.
		for _, line := range plan.Notes() {
			if queued == nil && strings.HasPrefix(line, "trial ") {
				continue
			}
			o.notify(line)
		}
	}
	run, runErr := optimize(ctx, st, spec, o, plan, workers)
	// The study is read back even after Ctrl-C so the caller can show it.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	trials, err := st.Trials(rctx)
	if err != nil {
		return nil, errors.Join(runErr, err)
	}
	res := &Result{
		Study: st.Name, Sampler: st.Sampler, Storage: spec.Storage, Objectives: plan.Objectives, Run: run,
		Trials: trials, Front: search.ParetoFront(trials, plan.Directions), Directions: plan.Directions,
		States: map[search.TrialState]int{},
	}
	for _, t := range trials {
		res.States[t.State]++
	}
	return res, runErr
}

// workers returns the evaluators of the study's workers in this process:
// Options.Workers, or Evaluate and Capacity as the one worker.
func (o Options) workers(spec Spec) ([]Worker, error) {
	if o.Launcher == nil {
		return nil, errors.New("tune: an engine is required")
	}
	n := max(spec.Parallel, 1)
	ws := o.Workers
	if len(ws) == 0 {
		ws = []Worker{{Evaluate: o.Evaluate, Capacity: o.Capacity}}
	}
	if len(ws) != n {
		return nil, fmt.Errorf("tune: search.parallel is %d but %d trial evaluators were given; each trial running at once needs its own (capacity.Evaluator.Study)", n, len(ws))
	}
	for _, w := range ws {
		if w.Evaluate == nil {
			return nil, errors.New("tune: an engine and an evaluator are required")
		}
	}
	return ws, nil
}

// optimize runs one study worker per entry of workers on st, all with
// the plan's sampler (safe for concurrent use; each proposal is made under
// the study's lock with the trials still running in its history), and
// sums what they did. Progress calls are serialised. When one worker
// fails, the others are stopped (their trials re-queued) and the first
// error is returned.
func optimize(ctx context.Context, st *study.Study, spec Spec, o Options, plan *Plan, workers []Worker) (study.Result, error) {
	same := &sameFailures{limit: spec.StopAfterSameFailures}
	ctx, stopStudy := context.WithCancelCause(ctx)
	defer stopStudy(nil)
	res, err := optimizeUntil(ctx, st, spec, o, plan, workers, same, stopStudy)
	if serr := same.err(); serr != nil {
		res.Interrupted = false
		return res, serr
	}
	return res, err
}

// optimizeUntil runs the study's workers; after each finished trial it
// stops them (stop) once same says the failures do not depend on the
// flags.
func optimizeUntil(ctx context.Context, st *study.Study, spec Spec, o Options, plan *Plan, workers []Worker, same *sameFailures, stop context.CancelCauseFunc) (study.Result, error) {
	var progressMu sync.Mutex
	lastFinished := 0
	progress := func(p study.Progress) {
		if err := same.err(); err != nil {
			stop(err)
		}
		if o.Progress == nil {
			return
		}
		progressMu.Lock()
		defer progressMu.Unlock()
		trials, err := st.Trials(ctx)
		if err != nil {
			o.Logger.Warn("read study for progress", "err", err)
			return
		}
		// workers count before they report: the count shown never
		// goes back
		lastFinished = max(lastFinished, p.Finished)
		o.Progress(Progress{
			Trial: p.Trial, Finished: lastFinished, Total: p.Total,
			FrontSize: len(search.ParetoFront(trials, plan.Directions)),
			Best:      Best(trials, plan.Directions), Objectives: plan.Objectives,
		})
	}
	opts := func(w Worker, name string) study.Options {
		wo := o
		wo.Evaluate, wo.Capacity = w.Evaluate, w.Capacity
		return study.Options{
			Study:             st,
			Sampler:           plan.Sampler,
			Objective:         (&evaluation{spec: spec, o: wo, plan: plan, same: same}).objective,
			Trials:            spec.Trials,
			Worker:            name,
			ArtifactsRoot:     o.ArtifactsRoot,
			Logger:            o.Logger,
			HeartbeatInterval: o.HeartbeatInterval,
			StaleAfter:        6 * o.HeartbeatInterval,
			Progress:          progress,
			// a worker with nothing to claim while its siblings' trials
			// run looks again soon: the last of them ends the study
			PollInterval: pollInterval(len(workers), o.HeartbeatInterval),
		}
	}
	if len(workers) == 1 {
		return study.Optimize(ctx, opts(workers[0], o.Worker))
	}
	base := o.Worker
	if base == "" {
		host, _ := os.Hostname()
		base = fmt.Sprintf("%s-%d-%04x", host, os.Getpid(), rand.Uint32()&0xffff)
	}
	wctx, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	results := make([]study.Result, len(workers))
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// each its own worker name: heartbeats and results are
			// matched to the worker that claimed the trial
			results[i], errs[i] = study.Optimize(wctx, opts(w, fmt.Sprintf("%s/%d", base, i+1)))
			if errs[i] != nil && wctx.Err() == nil {
				o.Logger.Warn("a study worker failed; stopping the others", "worker", i+1, "err", errs[i])
				stopWorkers()
			}
		}()
	}
	wg.Wait()
	var sum study.Result
	var first error
	for i, r := range results {
		sum.Ran += r.Ran
		sum.Complete += r.Complete
		sum.Failed += r.Failed
		sum.Infeasible += r.Infeasible
		sum.Reused += r.Reused
		sum.Interrupted = sum.Interrupted || r.Interrupted
		if err := errs[i]; err != nil && (first == nil || errors.Is(first, context.Canceled) && !errors.Is(err, context.Canceled)) {
			first = err
		}
	}
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return sum, first
}

// pollInterval is how often an idle worker of n in this process looks
// for a trial to claim: the heartbeat interval, at most a second when
// several run here (each poll is one read of the study).
func pollInterval(n int, heartbeat time.Duration) time.Duration {
	if n > 1 && (heartbeat <= 0 || heartbeat > time.Second) {
		return time.Second
	}
	return heartbeat
}

// Best returns the feasible COMPLETE trial with the best value of the first
// objective (the lowest number on ties), or nil.
func Best(trials []search.Trial, dirs []search.Direction) *search.Trial {
	var best *search.Trial
	for i := range trials {
		t := &trials[i]
		if t.State != search.StateComplete || !t.Feasible() || len(t.Values) != len(dirs) {
			continue
		}
		if best == nil || search.Oriented(t.Values[:1], dirs[:1])[0] < search.Oriented(best.Values[:1], dirs[:1])[0] {
			best = t
		}
	}
	return best
}
