package capacity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
)

// SweepConfig sweeps params to the capacity ceiling. Level evaluations are
// passed to keep (for records and telemetry) as they finish.
func SweepConfig(ctx context.Context, ev *Evaluator, params map[string]any, load func(users int) Load, opts SweepOptions, records func(users int) (io.WriteCloser, error)) (*SweepResult, error) {
	return Sweep(ctx, func(ctx context.Context, users, repeat int) (Repeat, error) {
		var out Outputs
		var w io.WriteCloser
		if records != nil && repeat == 0 {
			var err error
			if w, err = records(users); err != nil {
				return Repeat{}, err
			}
			out.Records = w
		}
		r, err := ev.Evaluate(ctx, params, load(users), out)
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
		return r.Repeat(), nil
	}, opts)
}

// ShortSweep sweeps params over the evaluator's configured flags with the
// tuning windows, one repeat and the sweep's resolution: the short sweep
// that compares candidate configurations with each other and with the
// baseline on equal terms. A coarser resolution (10 users) tied every
// candidate with the baseline on the reference case, hiding a tuned
// configuration whose full sweep served 168 users against the baseline's 156
// (measured before the simulator modelled async scheduling's lookahead).
// progress, when not nil, is called after every level.
func ShortSweep(ctx context.Context, ev *Evaluator, params map[string]any, progress func(l Level, phase string)) (*SweepResult, error) {
	opts := ShortSweepOptions(ev.Setup())
	opts.Progress = progress
	return SweepConfig(ctx, ev, params, ev.Setup().Windows.Tune.At, opts, nil)
}

// ShortSweepOptions are the bounds of a short sweep of s: the sweep's
// resolution, one repeat, few-sample levels judged on their values.
func ShortSweepOptions(s Setup) SweepOptions {
	opts := s.Sweep.SweepOptions
	opts.Repeats = 1
	opts.JudgeFewSamples = true
	return opts
}

// BaselineSweep is the short sweep of the configured engine flags. Its
// ceiling is the study's load when search.users is 0 (auto). progress, when
// not nil, is called after every level, so a long baseline is not silent.
func BaselineSweep(ctx context.Context, ev *Evaluator, progress func(l Level, phase string)) (*SweepResult, error) {
	return ShortSweep(ctx, ev, map[string]any{}, progress)
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
	Logger   *slog.Logger
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
	if ev.Virtual() {
		if _, err := ev.Deployment(params); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadParams, err)
		}
	}
	opts := s.Sweep.SweepOptions
	opts.Progress = o.Progress
	var records func(int) (io.WriteCloser, error)
	if o.RecordsDir != "" {
		if err := os.MkdirAll(o.RecordsDir, 0o755); err != nil {
			return nil, err
		}
		records = func(users int) (io.WriteCloser, error) {
			return CreateAtomic(filepath.Join(o.RecordsDir, fmt.Sprintf("sweep-users-%05d.jsonl", users)))
		}
	}
	return SweepConfig(ctx, ev, params, s.Windows.Sweep.At, opts, records)
}
