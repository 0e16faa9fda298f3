package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/search/grid"
	"github.com/spoc-project/spoc/search/nsga2"
	"github.com/spoc-project/spoc/search/random"
)

// Space converts the configured search space to a search.Space with the
// cross-parameter rules vLLM enforces at start-up, so impossible
// combinations are rejected before a server is launched.
func Space(cfg *config.Config) (search.Space, error) {
	var ps []search.Param
	for _, p := range cfg.Search.Space {
		var q search.Param
		switch p.Type {
		case "int":
			q = search.Param{Name: p.Name, Kind: search.KindInt, Low: p.Low, High: p.High, Log: p.Log, Step: max(p.Step, 1)}
			if p.Log {
				q.Step = 1
			}
		case "float":
			q = search.Param{Name: p.Name, Kind: search.KindFloat, Low: p.Low, High: p.High, Log: p.Log, Step: p.Step}
		case "bool", "categorical":
			q = search.Categorical(p.Name, p.Choices...)
		default:
			return search.Space{}, fmt.Errorf("search.space: parameter %q: unknown type %q", p.Name, p.Type)
		}
		ps = append(ps, q)
	}
	s, err := search.NewSpace(ps...)
	if err != nil {
		return s, fmt.Errorf("search.space: %w", err)
	}
	maxLen := cfg.Engine.MaxModelLen
	value := func(p search.Params, name string) (float64, bool) {
		if v, ok := p[name]; ok {
			return toFloat(v)
		}
		if v, ok := cfg.Engine.Params[name]; ok {
			return toFloat(v)
		}
		return 0, false
	}
	flag := func(p search.Params, name string, def bool) bool {
		v, ok := p[name]
		if !ok {
			v, ok = cfg.Engine.Params[name]
		}
		if b, isBool := v.(bool); ok && isBool {
			return b
		}
		return def
	}
	s = s.WithRule("max-num-batched-tokens >= max-num-seqs", func(p search.Params) error {
		b, ok1 := value(p, "max-num-batched-tokens")
		n, ok2 := value(p, "max-num-seqs")
		if ok1 && ok2 && b < n {
			return fmt.Errorf("max-num-batched-tokens %v < max-num-seqs %v", b, n)
		}
		return nil
	})
	s = s.WithRule("without chunked prefill, max-num-batched-tokens >= max-model-len", func(p search.Params) error {
		if flag(p, "enable-chunked-prefill", true) {
			return nil
		}
		if b, ok := value(p, "max-num-batched-tokens"); ok && b < float64(maxLen) {
			return fmt.Errorf("chunked prefill off needs max-num-batched-tokens >= max-model-len %d, got %v", maxLen, b)
		}
		return nil
	})
	return s, nil
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// Directions are the configured objectives' directions.
func Directions(cfg *config.Config) ([]search.Direction, error) {
	var ds []search.Direction
	for i, o := range cfg.Search.Objectives {
		d, err := search.ParseDirection(o.Direction)
		if err != nil {
			return nil, fmt.Errorf("search.objectives[%d]: %w", i, err)
		}
		ds = append(ds, d)
	}
	return ds, nil
}

// NewSampler builds the configured sampler.
func NewSampler(cfg *config.Config) (search.Sampler, error) {
	dirs, err := Directions(cfg)
	if err != nil {
		return nil, err
	}
	switch cfg.Search.Sampler {
	case "nsga2":
		return nsga2.New(nsga2.Options{PopulationSize: cfg.Search.Population, Directions: dirs,
			CrossoverProb: cfg.Search.CrossoverProb, MutationProb: cfg.Search.MutationProb, Seed: cfg.Search.Seed})
	case "random":
		return random.New(cfg.Search.Seed), nil
	case "grid":
		return grid.New(0, cfg.Search.Seed), nil
	}
	return nil, fmt.Errorf("search.sampler: unknown sampler %q", cfg.Search.Sampler)
}

// MetricValue extracts an objective metric from an evaluation. Latencies are
// seconds, throughputs per second. The "capacity" metric is computed by the
// caller (it needs an inner sweep) and is not available here.
func MetricValue(ev *Evaluation, metric string) (float64, error) {
	if ev.Summary == nil {
		return 0, errors.New("evaluation has no summary")
	}
	o := ev.Summary.Overall
	switch metric {
	case "output_throughput":
		return o.OutputTokensPerSecond, nil
	case "total_throughput":
		return o.TotalTokensPerSecond, nil
	case "request_throughput":
		return o.RequestsPerSecond, nil
	case "goodput":
		return o.GoodputPerSecond, nil
	}
	name, pct, ok := strings.Cut(metric, "_p")
	if !ok {
		return 0, fmt.Errorf("unknown metric %q", metric)
	}
	var l result.Latency
	switch name {
	case "ttft":
		l = o.TTFT
	case "itl":
		l = o.ITL
	case "tpot":
		l = o.TPOT
	case "e2e":
		l = o.E2E
	default:
		return 0, fmt.Errorf("unknown metric %q", metric)
	}
	var ms float64
	switch pct {
	case "50":
		ms = l.P50
	case "90":
		ms = l.P90
	case "95":
		ms = l.P95
	case "99":
		ms = l.P99
	default:
		return 0, fmt.Errorf("unknown percentile in metric %q", metric)
	}
	return ms / 1000, nil
}

// ConstraintNames name the SLA constraints Constraints returns, in order.
var ConstraintNames = []string{"ttft", "itl", "tpot", "e2e", "error_rate"}

// Constraints turns the SLA verdict of an evaluation into constraint values
// (≤ 0 satisfied): for every clause, the worst relative excess over its
// limit across the SLA's scopes, e.g. 0.2 when a TTFT p95 is 20 % over.
func Constraints(cfg *config.Config, ev *Evaluation) []float64 {
	cs := make([]float64, len(ConstraintNames))
	for i := range cs {
		cs[i] = -1
	}
	for _, v := range ev.Verdict.Violations {
		idx := -1
		for i, n := range ConstraintNames {
			if strings.HasPrefix(v.Clause, n) {
				idx = i
			}
		}
		excess := 1.0
		if v.Limit > 0 {
			excess = v.Value/v.Limit - 1
		}
		if idx < 0 { // no requests at all: every clause violated
			for i := range cs {
				cs[i] = math.Max(cs[i], 1)
			}
			continue
		}
		cs[idx] = math.Max(cs[idx], math.Max(excess, 1e-9))
	}
	return cs
}

// Objective is the study objective: evaluate the trial's parameters at the
// tuning load (search.users for search.duration after search.warmup) and
// return the configured metrics and the SLA constraints. When the metric
// "capacity" is configured, a short inner sweep finds the trial's ceiling.
func Objective(ev *Evaluator) search.Objective {
	cfg := ev.Config()
	return func(ctx context.Context, p search.Params) ([]float64, []float64, error) {
		load := Load{Users: cfg.Search.Users, Ramp: min(cfg.Run.Ramp.D(), cfg.Search.Warmup.D()), Warmup: cfg.Search.Warmup.D(),
			Duration: cfg.Search.Duration.D(), ThinkTimeScale: cfg.Run.ThinkTimeScale}
		out, closeOut, err := trialOutputs(ctx)
		if err != nil {
			return nil, nil, err
		}
		res, err := ev.Evaluate(ctx, map[string]any(p), load, out)
		if cerr := closeOut(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			return nil, nil, err
		}
		if tc := search.CurrentTrial(ctx); tc != nil {
			recordAttrs(tc, res)
		}
		vals := make([]float64, len(cfg.Search.Objectives))
		for i, o := range cfg.Search.Objectives {
			if o.Metric == "capacity" {
				sw, err := innerCeiling(ctx, ev, map[string]any(p), load)
				if err != nil {
					return nil, nil, err
				}
				vals[i] = float64(sw.Ceiling)
				continue
			}
			v, err := MetricValue(res, o.Metric)
			if err != nil {
				return nil, nil, fmt.Errorf("objective %s: %w", o.Metric, err)
			}
			vals[i] = v
		}
		return vals, Constraints(cfg, res), nil
	}
}

// trialOutputs opens records.jsonl and telemetry.jsonl in the trial's
// artefact directory when the study keeps artefacts.
func trialOutputs(ctx context.Context) (Outputs, func() error, error) {
	tc := search.CurrentTrial(ctx)
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

// innerCeiling is the short sweep behind the "capacity" objective: coarse
// resolution, the tuning windows.
func innerCeiling(ctx context.Context, ev *Evaluator, params map[string]any, load Load) (*SweepResult, error) {
	cfg := ev.Config()
	return Sweep(ctx, func(ctx context.Context, users, _ int) (Repeat, error) {
		l := load
		l.Users = users
		r, err := ev.Evaluate(ctx, params, l, Outputs{})
		if err != nil {
			return Repeat{}, err
		}
		return r.Repeat(), nil
	}, SweepOptions{Start: cfg.Sweep.Start, Max: cfg.Sweep.Max, ResolutionUsers: max(cfg.Sweep.ResolutionUsers, 10), ResolutionFraction: max(cfg.Sweep.ResolutionFraction, 0.1), Repeats: 1})
}

// recordAttrs keeps the numbers a report needs with the trial.
func recordAttrs(tc *search.TrialContext, ev *Evaluation) {
	o := ev.Summary.Overall
	tc.SetUserAttr("output_throughput", o.OutputTokensPerSecond)
	tc.SetUserAttr("ttft_p95_s", o.TTFT.P95/1000)
	tc.SetUserAttr("itl_p95_s", o.ITL.P95/1000)
	tc.SetUserAttr("error_rate", o.ErrorRate)
	tc.SetUserAttr("sla", ev.Verdict.String())
	if ev.Sim != nil {
		tc.SetUserAttr("kv_cache_usage_mean", ev.Sim.MeanKVUsage)
		tc.SetUserAttr("prefix_cache_hit_rate", ev.Sim.PrefixHitRate)
		tc.SetUserAttr("sm_active_mean", ev.Sim.MeanSMActive)
	}
}
