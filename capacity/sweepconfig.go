package capacity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spoc-project/spoc/internal/atomicfile"
)

// SweepConfig sweeps params to the capacity ceiling. Each run has its own
// workload seed (the LevelFunc's repeat index is the run's
// Load.SeedOffset). records, when set, receives the records of the first
// seed's first repeat of each level. The result carries the binding
// clause's Margin.
func SweepConfig(ctx context.Context, ev *Evaluator, params map[string]any, load func(users int) Load, opts SweepOptions, records func(users int) (io.WriteCloser, error)) (*SweepResult, error) {
	imported := ev.setup.Workload.Import != nil && (opts.Seeds > 1 || opts.Precision.Target > 0)
	if imported {
		opts.Seeds, opts.Precision = 1, Precision{}
	}
	var spent RunCost
	res, err := Sweep(ctx, levelFunc(ev, params, load, records, &spent), opts)
	if err != nil {
		return nil, err
	}
	res.RunCost = spent
	if imported {
		res.NoInterval, res.NoEstimate = errSameSessions.Error(), errSameSessions.Error()
	}
	res.Margin = sweepMargin(res)
	return res, nil
}

// errSameSessions: an imported trace is replayed as recorded whatever the
// workload seed, so other seeds would only repeat the first one's sweep.
var errSameSessions = errors.New("an imported trace replays the same sessions for every workload seed")

// IntervalConfig adds the capacity estimate (opts.Precision set) or the
// interval over opts.Seeds workload seeds to res, an earlier SweepConfig
// of params with the same load and options but one seed and no
// refinement: the refinement and the seeds' walks start from its bracket,
// so its grid is not run again.
func IntervalConfig(ctx context.Context, ev *Evaluator, params map[string]any, load func(users int) Load, opts SweepOptions, res *SweepResult) error {
	if ev.setup.Workload.Import != nil {
		res.NoInterval, res.NoEstimate = errSameSessions.Error(), errSameSessions.Error()
		return nil
	}
	return AddUncertainty(ctx, levelFunc(ev, params, load, nil, &res.RunCost), opts, res)
}

// RunCost is what a sweep's runs took: how many ran and their engine
// time, the sum of each run's windows (ramp, warm-up, measured) in
// virtual time on the simulator, and each run's wall time (its server's
// start or cache reset included) on a live engine.
type RunCost struct {
	RunsMade      int     `json:"runs_made"`
	EngineSeconds float64 `json:"engine_seconds"`
}

// levelFunc evaluates params at load(users) with workload seed offset
// repeat, writing the records of seed index 0 to records(users), and adds
// each run to spent.
func levelFunc(ev *Evaluator, params map[string]any, load func(users int) Load, records func(users int) (io.WriteCloser, error), spent *RunCost) LevelFunc {
	return func(ctx context.Context, users, repeat int) (Repeat, error) {
		var out Outputs
		var w io.WriteCloser
		if records != nil && repeat == 0 {
			var err error
			if w, err = records(users); err != nil {
				return Repeat{}, err
			}
			out.Records = w
		}
		l := load(users)
		l.SeedOffset = uint64(repeat)
		r, err := ev.Evaluate(ctx, params, l, out)
		if w != nil {
			if a, ok := w.(interface{ Abort() }); ok && err != nil {
				a.Abort() // an interrupted level leaves no records file
			} else if cerr := w.Close(); err == nil && cerr != nil {
				err = cerr
			}
		}
		if err != nil {
			return Repeat{}, err
		}
		spent.RunsMade++
		if r.Virtual {
			spent.EngineSeconds += (l.Ramp + l.Warmup + l.Duration).Seconds()
		} else {
			spent.EngineSeconds += r.Wall.Seconds()
		}
		rep := r.Repeat()
		k := r.KneeRun(repeat)
		rep.Knee = &k
		return rep, nil
	}
}

// CandidateSweep sweeps params over the evaluator's configured flags as
// the capacity sweep would — the sweep's windows, warm-up, repeats and
// resolution — with one workload seed and no records: the sweep that ranks
// candidate configurations against each other and the baseline at the
// fidelity of the sweep that states the capacity. Ranking on the tuning
// windows instead was optimistic and uneven: on the reference case the
// configured flags' short sweep (5-minute windows) gave 175 users where
// their sweep gave 156, and four candidates tied at 175 that the sweep put
// at 156–162 (docs/capacity.md, "Ranking at the sweep's fidelity").
// progress, when not nil, is called after every level.
func CandidateSweep(ctx context.Context, ev *Evaluator, params map[string]any, progress func(l Level, phase string)) (*SweepResult, error) {
	opts := CandidateSweepOptions(ev.Setup())
	opts.Progress = progress
	return SweepConfig(ctx, ev, params, ev.Setup().Windows.Sweep.At, opts, nil)
}

// CandidateSweepOptions are the bounds of a candidate sweep of s: the
// sweep's, with one workload seed and no refinement (a walk).
func CandidateSweepOptions(s Setup) SweepOptions {
	opts := s.Sweep.SweepOptions
	opts.Seeds, opts.Precision = 1, Precision{}
	return opts
}

// BaselineSweep is the candidate sweep of the configured engine flags. Its
// ceiling is the study's load when search.users is 0 (auto). progress, when
// not nil, is called after every level, so a long baseline is not silent.
func BaselineSweep(ctx context.Context, ev *Evaluator, progress func(l Level, phase string)) (*SweepResult, error) {
	return CandidateSweep(ctx, ev, map[string]any{}, progress)
}

// BaselineSweepRecords is BaselineSweep keeping each level's records in
// records(users), so that a later sweep of the same flags with the same
// windows can take the level as measured (SweepOptions.Known) with its
// records instead of running it again.
func BaselineSweepRecords(ctx context.Context, ev *Evaluator, progress func(l Level, phase string), records func(users int) (io.WriteCloser, error)) (*SweepResult, error) {
	opts := CandidateSweepOptions(ev.Setup())
	opts.Progress = progress
	return SweepConfig(ctx, ev, map[string]any{}, ev.Setup().Windows.Sweep.At, opts, records)
}

// CeilingThroughput is the output throughput the sweep measured at its
// ceiling (the mean over repeats): the most tokens/s the configuration
// served within the SLA; 0 when no level passed.
func (r *SweepResult) CeilingThroughput() float64 {
	for _, l := range r.Levels {
		if l.Users == r.Ceiling {
			return meanThroughput(l)
		}
	}
	return 0
}

// SweepRun configures SweepOne.
type SweepRun struct {
	// RecordsDir keeps each level's first repeat as
	// sweep-users-NNNNN.jsonl (empty: no records).
	RecordsDir string
	// Progress is called after every level.
	Progress func(l Level, phase string)
	// SeedProgress is called with each other seed's ceiling (sweep.seeds).
	SeedProgress func(SeedCeiling)
	// RunProgress is called after each refinement run with the estimate
	// so far (sweep.precision).
	RunProgress func(KneeRun, *CapacityEstimate)
	// Runs, when set, receives each live run's status about once a second
	// (Evaluator.WatchRuns): a level of minutes shows progress.
	Runs   func(RunStatus)
	Logger *slog.Logger
}

// ErrBadParams marks flags the engine refuses before anything runs.
var ErrBadParams = errors.New("engine flags")

// SweepOne is the `spoc sweep` use case: params (over the configured
// flags) swept to the capacity ceiling with the sweep's windows, repeats
// and resolution on s's engine, one server for all levels. The simulator
// refuses impossible flags before the first level (ErrBadParams).
func SweepOne(ctx context.Context, s Setup, params map[string]any, o SweepRun) (*SweepResult, error) {
	ev, err := NewEvaluator(s, o.Logger)
	if err != nil {
		return nil, err
	}
	defer ev.Close(ctx)
	if o.Runs != nil {
		ev.WatchRuns(o.Runs)
	}
	if ev.Virtual() {
		if _, err := ev.Deployment(params); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadParams, err)
		}
	}
	opts := s.Sweep.SweepOptions
	opts.Progress, opts.SeedProgress, opts.RunProgress = o.Progress, o.SeedProgress, o.RunProgress
	var records func(int) (io.WriteCloser, error)
	if o.RecordsDir != "" {
		if err := os.MkdirAll(o.RecordsDir, 0o755); err != nil {
			return nil, err
		}
		records = func(users int) (io.WriteCloser, error) {
			return atomicfile.Create(filepath.Join(o.RecordsDir, fmt.Sprintf("sweep-users-%05d.jsonl", users)))
		}
	}
	return SweepConfig(ctx, ev, params, s.Windows.Sweep.At, opts, records)
}
