package capacity

import (
	"context"
	"io"
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
func ShortSweep(ctx context.Context, ev *Evaluator, params map[string]any) (*SweepResult, error) {
	s := ev.Setup()
	opts := s.Sweep.SweepOptions
	opts.Repeats = 1
	opts.JudgeFewSamples = true
	return SweepConfig(ctx, ev, params, s.Windows.Tune.At, opts, nil)
}

// BaselineSweep is the short sweep of the configured engine flags. Its
// ceiling is the study's load when search.users is 0 (auto).
func BaselineSweep(ctx context.Context, ev *Evaluator) (*SweepResult, error) {
	return ShortSweep(ctx, ev, map[string]any{})
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
