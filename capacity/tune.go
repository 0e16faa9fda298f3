package capacity

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/tune"
)

// TuneLoad is the load every trial of the study runs: search.users for
// search.duration after search.warmup.
func TuneLoad(cfg *config.Config) Load {
	return Load{Users: cfg.Search.Users, Ramp: min(cfg.Run.Ramp.D(), cfg.Search.Warmup.D()), Warmup: cfg.Search.Warmup.D(),
		Duration: cfg.Search.Duration.D(), ThinkTimeScale: cfg.Run.ThinkTimeScale}
}

// TuneEvaluator adapts the evaluator to package tune: each trial runs at
// TuneLoad on the evaluator's engine (virtual time for the simulator),
// keeps records and telemetry in the trial's artefact folder when the study
// has one, and stores the numbers a report needs as trial attributes.
func (e *Evaluator) TuneEvaluator() tune.Evaluator {
	return func(ctx context.Context, t *search.TrialContext) (*result.Result, error) {
		out, closeOut, err := trialOutputs(t)
		if err != nil {
			return nil, err
		}
		ev, err := e.Evaluate(ctx, map[string]any(t.Params), TuneLoad(e.cfg), out)
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

// CapacityFunc adapts a short sweep to package tune's "capacity" objective:
// coarse resolution (max(10 users, 10 %)) over the tuning windows.
func (e *Evaluator) CapacityFunc() tune.CapacityFunc {
	return func(ctx context.Context, t *search.TrialContext) (int, error) {
		cfg := e.cfg
		res, err := Sweep(ctx, func(ctx context.Context, users, _ int) (Repeat, error) {
			l := TuneLoad(cfg)
			l.Users = users
			r, err := e.Evaluate(ctx, map[string]any(t.Params), l, Outputs{})
			if err != nil {
				return Repeat{}, err
			}
			return r.Repeat(), nil
		}, SweepOptions{Start: cfg.Sweep.Start, Max: cfg.Sweep.Max, ResolutionUsers: max(cfg.Sweep.ResolutionUsers, 10),
			ResolutionFraction: max(cfg.Sweep.ResolutionFraction, 0.1), Repeats: 1})
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
	if ev.Sim != nil {
		tc.SetUserAttr("kv_cache_usage_mean", ev.Sim.MeanKVUsage)
		tc.SetUserAttr("prefix_cache_hit_rate", ev.Sim.PrefixHitRate)
		tc.SetUserAttr("sm_active_mean", ev.Sim.MeanSMActive)
		tc.SetUserAttr("preemptions", ev.Sim.Preemptions)
	}
}
