package capacity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/loadgen"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/telemetry"
	"github.com/spoc-project/spoc/workload"
)

// Load is one point of load: users and the run windows.
type Load struct {
	Users          int
	Ramp           time.Duration
	Warmup         time.Duration
	Duration       time.Duration
	ThinkTimeScale float64
}

// RunLoad is the load of cfg.Run at users users.
func RunLoad(cfg *config.Config, users int) Load {
	return Load{Users: users, Ramp: cfg.Run.Ramp.D(), Warmup: cfg.Run.Warmup.D(), Duration: cfg.Run.Duration.D(), ThinkTimeScale: cfg.Run.ThinkTimeScale}
}

// Outputs are optional writers for one evaluation's raw data.
type Outputs struct {
	// Records receives every request as a JSON line.
	Records io.Writer
	// Telemetry receives every scrape as a JSON line (live engines only).
	Telemetry io.Writer
}

// Evaluation is one configuration measured at one load.
type Evaluation struct {
	Users  int            `json:"users"`
	Params map[string]any `json:"params"`
	// Virtual is set when the run happened in the simulator's virtual time.
	Virtual bool               `json:"virtual"`
	Summary *result.Result     `json:"summary"`
	Verdict result.Verdict     `json:"-"`
	Pass    bool               `json:"pass"`
	Failed  string             `json:"failed_clause,omitempty"`
	Signals *telemetry.Signals `json:"telemetry,omitempty"`
	// Sim describes the simulated deployment (virtual runs only).
	Sim *SimInfo `json:"sim,omitempty"`
	// Wall is how long the evaluation took on this machine.
	Wall time.Duration `json:"wall_ns"`
}

// SimInfo is what the simulator knows that a real server would not say.
type SimInfo struct {
	Replicas       int         `json:"replicas"`
	KVTokens       int         `json:"kv_tokens_per_replica"`
	MeanKVUsage    float64     `json:"mean_kv_cache_usage"`
	PeakKVUsage    float64     `json:"peak_kv_cache_usage"`
	MeanSMActive   float64     `json:"mean_sm_active"`
	PrefixHitRate  float64     `json:"prefix_cache_hit_rate"`
	Preemptions    int64       `json:"preemptions"`
	AttentionShare float64     `json:"attention_share"`
	MoEShare       float64     `json:"moe_share"`
	DenseShare     float64     `json:"dense_gemm_share"`
	CommShare      float64     `json:"communication_share"`
	OverheadShare  float64     `json:"overhead_share"`
	OtherShare     float64     `json:"other_share"`
	Series         *sim.Series `json:"-"`
}

// Repeat reduces an evaluation to what the sweep needs.
func (ev *Evaluation) Repeat() Repeat {
	r := Repeat{Pass: ev.Pass, FailedClause: ev.Failed, Detail: ev}
	if ev.Summary != nil {
		o := ev.Summary.Overall
		r.OutputThroughput = o.OutputTokensPerSecond
		r.TTFTP95 = o.TTFT.P95 / 1000
		r.ITLP95 = o.ITL.P95 / 1000
	}
	return r
}

// Evaluator runs one configuration at one load, on the simulator in virtual
// time or on a real engine over HTTP.
type Evaluator struct {
	cfg    *config.Config
	gen    workload.Workload
	engine engine.Engine
	logger *slog.Logger
	// mu serialises live evaluations: an engine runs one server at a time.
	mu sync.Mutex
}

// NewEvaluator builds the workload of cfg once. A nil engine means the
// simulator launcher of cfg.Engine; the simulator (engine.Virtual) runs in
// virtual time, any other engine is started per evaluation and loaded over
// HTTP.
func NewEvaluator(cfg *config.Config, eng engine.Engine, logger *slog.Logger) (*Evaluator, error) {
	gen, err := workload.OpenForRun(cfg.Workload, cfg.Engine.MaxModelLen, cfg.Run.MidSessionStart)
	if err != nil {
		return nil, fmt.Errorf("build workload: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if eng == nil {
		// The simulator launcher prices deployments (and refuses those whose
		// weights leave no KV cache) the same way for tune, sweep and plan.
		s, err := engine.NewSimFromConfig(cfg.Engine, engine.Options{Logger: logger})
		if err != nil {
			return nil, err
		}
		eng = s
	}
	return &Evaluator{cfg: cfg, gen: gen, engine: eng, logger: logger}, nil
}

// Workload is the session source shared by every evaluation.
func (e *Evaluator) Workload() workload.Workload { return e.gen }

// Config is the plan configuration the evaluator was built with.
func (e *Evaluator) Config() *config.Config { return e.cfg }

// Evaluate runs params at load and judges the run against the SLA. An
// engine configuration that cannot run (weights or KV cache do not fit, the
// server crashes or runs out of memory) returns an error wrapping
// search.ErrInfeasible.
func (e *Evaluator) Evaluate(ctx context.Context, params map[string]any, load Load, out Outputs) (*Evaluation, error) {
	return e.evaluate(ctx, e.engine, params, load, out)
}

func (e *Evaluator) evaluate(ctx context.Context, eng engine.Engine, params map[string]any, load Load, out Outputs) (*Evaluation, error) {
	if load.Users < 1 {
		return nil, fmt.Errorf("evaluate: users must be at least 1, got %d", load.Users)
	}
	start := time.Now()
	var ev *Evaluation
	var err error
	switch v := eng.(type) {
	case engine.Virtual:
		var dep sim.Deployment
		if dep, err = v.VirtualDeployment(search.Params(params)); err == nil {
			ev, err = e.evaluateVirtual(ctx, dep, params, load, out)
		}
	default:
		ev, err = e.evaluateLive(ctx, eng, params, load, out)
	}
	if err != nil {
		return nil, err
	}
	ev.Wall = time.Since(start)
	return ev, nil
}

// Deployment is the simulated deployment of params: the simulator
// launcher's, or, for a real engine, the configuration priced by the cost
// model (for roofline predictions).
func (e *Evaluator) Deployment(params map[string]any) (sim.Deployment, error) {
	if v, ok := e.engine.(engine.Virtual); ok {
		return v.VirtualDeployment(search.Params(params))
	}
	dep, err := sim.NewDeployment(e.cfg.Engine.SimDeployment())
	if err != nil {
		return dep, err
	}
	return dep, dep.Params.Apply(params)
}

func (e *Evaluator) evaluateVirtual(ctx context.Context, dep sim.Deployment, params map[string]any, load Load, out Outputs) (*Evaluation, error) {
	epoch := time.Unix(0, 0).UTC()
	window := result.Window{Start: epoch.Add(load.Warmup), End: epoch.Add(load.Warmup + load.Duration)}
	sum := result.NewSummary(e.cfg.SLA.Result(), window, result.WithClientBoundLag(e.cfg.Run.ClientBoundLagP99.D()))
	sinks := []result.Sink{sum}
	var w *result.Writer
	if out.Records != nil {
		w = result.NewWriter(out.Records)
		sinks = append(sinks, w)
	}
	stats, err := sim.RunVirtual(ctx, sim.Options{
		Deployment: dep, Users: load.Users, Ramp: load.Ramp, Warmup: load.Warmup, Duration: load.Duration,
		ThinkTimeScale: load.ThinkTimeScale, Start: epoch, RunID: fmt.Sprintf("sim-%d", load.Users),
		ErrorRate: e.cfg.Engine.Sim.ErrorRate, Seed: e.cfg.Workload.Seed,
	}, e.gen, result.Tee(sinks...))
	if w != nil {
		if cerr := w.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("write records: %w", cerr)
		}
	}
	if err != nil {
		if stats == nil && ctx.Err() == nil {
			// the deployment could not be built: weights or KV cache do not fit
			return nil, fmt.Errorf("%w: %w", search.ErrInfeasible, err)
		}
		return nil, err
	}
	res := sum.Result()
	ev := &Evaluation{Users: load.Users, Params: params, Virtual: true, Summary: res, Verdict: res.SLA, Pass: res.SLA.Pass, Failed: res.SLA.First()}
	sig := SimSignals(stats, dep, e.cfg.Telemetry.StragglerClockDrop)
	ev.Signals = &sig
	share := stats.Share()
	ev.Sim = &SimInfo{
		Replicas: stats.Replicas, KVTokens: stats.KVTokens, MeanKVUsage: stats.MeanKVUsage, PeakKVUsage: stats.PeakKVUsage,
		MeanSMActive: stats.MeanSMActive, Preemptions: stats.Engine.Preemptions,
		AttentionShare: share.Attention, MoEShare: share.MoE, DenseShare: share.DenseGEMM, CommShare: share.Communication,
		OverheadShare: share.Overhead, OtherShare: share.Other, Series: &stats.Series,
	}
	if q := stats.Engine.PrefixQueries; q > 0 {
		ev.Sim.PrefixHitRate = float64(stats.Engine.PrefixHits) / float64(q)
	}
	return ev, nil
}

func (e *Evaluator) evaluateLive(ctx context.Context, eng engine.Engine, params map[string]any, load Load, out Outputs) (ev *Evaluation, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ep, err := eng.Start(ctx, search.Params(params))
	if err != nil {
		return nil, fmt.Errorf("start engine: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if serr := eng.Stop(sctx); serr != nil && err == nil {
			err = fmt.Errorf("stop engine: %w", serr)
		}
	}()

	var targets []telemetry.Target
	for i, u := range ep.MetricsURLs {
		targets = append(targets, telemetry.Target{Name: fmt.Sprintf("engine%d", i), URL: u})
	}
	for _, t := range e.cfg.Telemetry.Targets {
		targets = append(targets, telemetry.Target{Name: t.Name, URL: t.URL})
	}
	var coll *telemetry.Collector
	tctx, stopTelemetry := context.WithCancel(ctx)
	var twg sync.WaitGroup
	// With a Prometheus server configured, the run's window is queried from
	// it afterwards instead of scraping the targets directly.
	if e.cfg.Telemetry.Enabled && len(targets) > 0 && e.cfg.Telemetry.Prometheus == "" {
		coll, err = telemetry.NewCollector(targets, e.cfg.Telemetry.Interval.D(), telemetry.Options{
			JSONL: out.Telemetry, Logger: e.logger,
			Derive: telemetry.DeriveOptions{ClockFraction: e.cfg.Telemetry.StragglerClockDrop, TPSize: e.cfg.Engine.TensorParallelSize},
		})
		if err != nil {
			stopTelemetry()
			return nil, fmt.Errorf("telemetry: %w", err)
		}
		twg.Add(1)
		go func() { defer twg.Done(); _ = coll.Run(tctx) }()
	}
	defer func() { stopTelemetry(); twg.Wait() }()

	model := ep.Model
	if model == "" {
		model = e.cfg.Engine.ServedModelName
	}
	if model == "" {
		model = e.cfg.Engine.Model
	}
	runner, err := loadgen.New(loadgen.Options{
		Target: ep.BaseURL, Endpoint: e.cfg.Run.Endpoint, Model: model, APIKey: os.Getenv(e.cfg.Run.APIKeyEnv),
		Users: load.Users, Ramp: load.Ramp, Warmup: load.Warmup, Duration: load.Duration, ThinkTimeScale: load.ThinkTimeScale,
		RequestTimeout: e.cfg.Run.RequestTimeout.D(), FirstByteTimeout: e.cfg.Run.FirstByteTimeout.D(),
		ExactOutputLength: e.cfg.Workload.ExactOutputLength, RunID: fmt.Sprintf("run-%d-%d", load.Users, time.Now().Unix()),
		Renderer: e.gen, Logger: e.logger,
	})
	if err != nil {
		return nil, err
	}
	sum := result.NewSummary(e.cfg.SLA.Result(), result.Window{}, result.WithClientBoundLag(e.cfg.Run.ClientBoundLagP99.D()))
	sinks := []result.Sink{sum}
	var w *result.Writer
	if out.Records != nil {
		w = result.NewWriter(out.Records)
		sinks = append(sinks, w)
	}
	rep, err := runner.Run(ctx, e.gen, result.Tee(sinks...))
	if w != nil {
		if cerr := w.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("write records: %w", cerr)
		}
	}
	if err != nil {
		return nil, err
	}
	sum.SetWindow(rep.Window)
	sum.SetClientHealth(rep.Health)
	res := sum.Result()
	ev = &Evaluation{Users: load.Users, Params: params, Summary: res, Verdict: res.SLA, Pass: res.SLA.Pass, Failed: res.SLA.First()}
	derive := telemetry.DeriveOptions{ClockFraction: e.cfg.Telemetry.StragglerClockDrop, TPSize: e.cfg.Engine.TensorParallelSize}
	switch {
	case coll != nil:
		stopTelemetry()
		twg.Wait()
		sig := coll.Window(rep.Window.Start, rep.Window.End)
		ev.Signals = &sig
	case e.cfg.Telemetry.Enabled && e.cfg.Telemetry.Prometheus != "":
		store, qerr := telemetry.QueryRange(ctx, e.cfg.Telemetry.Prometheus, rep.Window.Start, rep.Window.End,
			telemetry.QueryOptions{Step: e.cfg.Telemetry.Interval.D(), Queries: telemetry.Queries(e.cfg.Telemetry.Queries)})
		if qerr != nil {
			// the load run stands on its own; the gap is logged, not fatal
			e.logger.Warn("telemetry query failed; the run has no engine or GPU signals", "prometheus", e.cfg.Telemetry.Prometheus, "err", qerr)
			break
		}
		sig := store.Window(rep.Window.Start, rep.Window.End, derive)
		ev.Signals = &sig
	}
	return ev, nil
}

// IsInfeasible reports whether err means the configuration cannot run.
func IsInfeasible(err error) bool { return errors.Is(err, search.ErrInfeasible) }
