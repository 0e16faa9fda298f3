package study

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/spoc-project/spoc/search"
)

// Defaults for Options.
const (
	DefaultHeartbeatInterval = 10 * time.Second
	// DefaultStaleAfter is how long a RUNNING trial may go without a
	// heartbeat before another worker declares its worker dead. Clocks of
	// workers sharing a study should agree to well within it.
	DefaultStaleAfter = 6 * DefaultHeartbeatInterval
)

// Options configures Optimize. Study, Sampler, Objective and Trials are
// required.
type Options struct {
	Study *Study
	// Space overrides Study.Space, for example to supply rules to a study
	// opened with Load.
	Space     search.Space
	Sampler   search.Sampler
	Objective search.Objective
	// Trials is the study's total trial budget: Optimize returns once that
	// many trials are finished (FAIL trials re-queued after a crash or an
	// interruption do not count; their re-runs do). Running Optimize again
	// on the same study continues up to the same total.
	Trials int
	// Worker identifies this worker in the study (default host-pid-random).
	Worker string
	// ArtifactsRoot, when set, gives every trial a directory
	// ArtifactsRoot/<study>/trial-NNNNN, created before the objective runs.
	ArtifactsRoot string
	// Logger receives progress and warnings (default: discarded).
	Logger *slog.Logger
	// Progress, when set, is called after each trial this worker finishes.
	Progress func(Progress)

	HeartbeatInterval time.Duration // default DefaultHeartbeatInterval
	StaleAfter        time.Duration // default DefaultStaleAfter
	// PollInterval is how often a worker with nothing to claim checks again
	// while other workers' trials are still running (default
	// HeartbeatInterval).
	PollInterval time.Duration
}

// Progress reports one finished trial.
type Progress struct {
	Trial  search.Trial
	Worker string
	// Finished is how many trials of the budget are finished; Total is the
	// budget.
	Finished, Total int
}

// Result counts what one Optimize call did.
type Result struct {
	Ran        int `json:"ran"`
	Complete   int `json:"complete"`
	Failed     int `json:"failed"`
	Infeasible int `json:"infeasible"`
	// Reused counts trials recorded with the result of an earlier trial
	// with canonically equal parameters (system attribute duplicate_of)
	// instead of being evaluated again; they are not in Ran.
	Reused int `json:"reused,omitempty"`
	// Interrupted is set when ctx ended the loop; the running trial was
	// re-queued.
	Interrupted bool `json:"interrupted"`
}

type worker struct {
	opt Options
	id  string
	log *slog.Logger
	// cache holds the study's trials by number as last read; see refresh.
	cache []storedTrial
}

// Optimize runs the study's trial loop in this worker until the trial
// budget is spent, the sampler is exhausted, or ctx ends. Several workers
// (goroutines, processes or machines) may run it on the same study at once.
// When ctx ends, the trial in flight is marked FAIL and re-queued, and
// Optimize returns ctx's error with the Result so far.
func Optimize(ctx context.Context, opt Options) (Result, error) {
	if err := validate(&opt); err != nil {
		return Result{}, err
	}
	w := &worker{opt: opt, id: opt.Worker, log: opt.Logger}
	var res Result
	for {
		if err := ctx.Err(); err != nil {
			res.Interrupted = true
			return res, err
		}
		c, err := w.claimTrial(ctx)
		if err != nil {
			if ctx.Err() != nil {
				res.Interrupted = true
				return res, ctx.Err()
			}
			return res, err
		}
		switch {
		case c.done:
			w.log.Info("study budget reached", "study", opt.Study.Name, "trials", opt.Trials)
			return res, nil
		case c.reused != nil:
			res.Reused++
			if opt.Progress != nil {
				finished, err := w.finished(ctx)
				if err != nil {
					return res, err
				}
				opt.Progress(Progress{Trial: c.reused.Trial, Worker: w.id, Finished: finished, Total: opt.Trials})
			}
			continue
		case c.wait:
			select {
			case <-ctx.Done():
				res.Interrupted = true
				return res, ctx.Err()
			case <-time.After(opt.PollInterval):
			}
			continue
		}
		t, kept, err := w.run(ctx, c.trial)
		if err != nil {
			return res, err
		}
		if ctx.Err() != nil {
			res.Interrupted = true
			return res, ctx.Err()
		}
		if !kept {
			continue
		}
		res.Ran++
		switch t.State {
		case search.StateComplete:
			res.Complete++
		case search.StateInfeasible:
			res.Infeasible++
		default:
			res.Failed++
		}
		if opt.Progress != nil {
			finished, err := w.finished(ctx)
			if err != nil {
				return res, err
			}
			opt.Progress(Progress{Trial: t.Trial, Worker: w.id, Finished: finished, Total: opt.Trials})
		}
	}
}

func validate(opt *Options) error {
	switch {
	case opt.Study == nil:
		return errors.New("optimize: no study")
	case opt.Sampler == nil:
		return fmt.Errorf("optimize study %q: no sampler", opt.Study.Name)
	case opt.Objective == nil:
		return fmt.Errorf("optimize study %q: no objective", opt.Study.Name)
	case opt.Trials <= 0:
		return fmt.Errorf("optimize study %q: trial budget must be > 0, got %d", opt.Study.Name, opt.Trials)
	}
	if opt.Space.Params == nil {
		opt.Space = opt.Study.Space
	}
	if err := opt.Space.Validate(); err != nil {
		return fmt.Errorf("optimize study %q: %w", opt.Study.Name, err)
	}
	if opt.Worker == "" {
		host, _ := os.Hostname()
		opt.Worker = fmt.Sprintf("%s-%d-%04x", host, os.Getpid(), rand.Uint32()&0xffff)
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.HeartbeatInterval <= 0 {
		opt.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if opt.StaleAfter <= 0 {
		opt.StaleAfter = DefaultStaleAfter
	}
	if opt.StaleAfter <= 2*opt.HeartbeatInterval {
		return fmt.Errorf("optimize study %q: StaleAfter %v must exceed two heartbeat intervals (%v)", opt.Study.Name, opt.StaleAfter, opt.HeartbeatInterval)
	}
	if opt.PollInterval <= 0 {
		opt.PollInterval = opt.HeartbeatInterval
	}
	return nil
}

// run evaluates one claimed trial with heartbeats and records the outcome.
// kept is false when the trial was taken away (found stale by another
// worker) or re-queued because ctx ended.
func (w *worker) run(ctx context.Context, t *storedTrial) (storedTrial, bool, error) {
	st := w.opt.Study
	log := w.log.With("study", st.Name, "trial", t.Number, "generation", t.Generation)
	if w.opt.ArtifactsRoot != "" {
		t.Artifacts = filepath.Join(w.opt.ArtifactsRoot, st.Name, fmt.Sprintf("trial-%05d", t.Number))
		if err := os.MkdirAll(t.Artifacts, 0o755); err != nil {
			return *t, false, fmt.Errorf("trial %d: create artefact directory: %w", t.Number, err)
		}
	}
	tc := &search.TrialContext{Params: t.Params, Number: t.Number, Generation: t.Generation, Artifacts: t.Artifacts}
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	lost := make(chan struct{})
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		tick := time.NewTicker(w.opt.HeartbeatInterval)
		defer tick.Stop()
		for {
			select {
			case <-octx.Done():
				return
			case <-tick.C:
				ok, err := w.heartbeat(octx, t)
				if err != nil {
					log.Warn("heartbeat failed", "err", err)
					continue
				}
				if !ok {
					close(lost)
					cancel()
					return
				}
			}
		}
	}()
	log.Info("trial started", "params", t.Params)
	values, cons, err := w.opt.Objective(octx, tc)
	cancel()
	<-hbDone

	// Record with a context that outlives Ctrl-C so the store stays exact.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer rcancel()
	select {
	case <-lost:
		log.Warn("trial was re-queued by another worker while running; result dropped")
		return *t, false, nil
	default:
	}
	if ctx.Err() != nil {
		err := st.db.inStudyTx(rctx, st, func(tx *sql.Tx) error {
			n, err := st.requeue(rctx, tx, *t, "interrupted: "+ctx.Err().Error())
			if err == nil {
				log.Info("trial interrupted and re-queued", "as", n)
			}
			return err
		})
		return *t, false, err
	}
	t.Complete = time.Now().UTC()
	t.UserAttrs = encodeAttrs(tc.UserAttrs())
	t.SystemAttrs = mergeAttrs(t.SystemAttrs, map[string]any{"worker": w.id})
	switch {
	case errors.Is(err, search.ErrInfeasible):
		t.State = search.StateInfeasible
		t.SystemAttrs["fail_reason"] = err.Error()
	case err != nil:
		t.State = search.StateFail
		t.SystemAttrs["fail_reason"] = err.Error()
	default:
		if reason := checkValues(values, cons, len(st.Directions)); reason != "" {
			t.State = search.StateFail
			t.SystemAttrs["fail_reason"] = reason
		} else {
			t.State, t.Values, t.Constraints = search.StateComplete, values, cons
		}
	}
	ok, ferr := w.finish(rctx, t)
	if ferr != nil {
		return *t, false, ferr
	}
	if !ok {
		log.Warn("trial was re-queued by another worker before it finished; result dropped")
		return *t, false, nil
	}
	log.Info("trial finished", "state", t.State, "values", t.Values, "constraints", t.Constraints, "reason", t.SystemAttrs["fail_reason"])
	return *t, true, nil
}

func checkValues(values, cons []float64, objectives int) string {
	if len(values) != objectives {
		return fmt.Sprintf("objective returned %d values for %d directions", len(values), objectives)
	}
	for i, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Sprintf("objective value %d is %v", i, v)
		}
	}
	for i, c := range cons {
		if math.IsNaN(c) || math.IsInf(c, 0) {
			return fmt.Sprintf("constraint %d is %v", i, c)
		}
	}
	return ""
}

// finished counts the trials of the budget in a final state.
func (w *worker) finished(ctx context.Context) (int, error) {
	st := w.opt.Study
	var n int
	err := st.db.sql.QueryRowContext(ctx, st.db.rebind(`SELECT COUNT(*) FROM trials WHERE study_id = ? AND state NOT IN (?, ?) AND requeued = 0`),
		st.id, string(search.StateWaiting), string(search.StateRunning)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count finished trials of study %q: %w", st.Name, err)
	}
	return n, nil
}
