package capacity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/loadgen"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/telemetry"
	"github.com/spoc-project/spoc/vllm"
	"github.com/spoc-project/spoc/workload"
)

// Load is one point of load: users and the run windows.
type Load struct {
	Users          int
	Ramp           time.Duration
	Warmup         time.Duration
	Duration       time.Duration
	ThinkTimeScale float64
	// SeedOffset is added to workload.seed for this run: repeat r of a
	// sweep level runs with offset r, so repeats measure different users,
	// sessions and arrival times instead of replaying one run (see
	// docs/capacity.md, "Seeds"). The simulator's own random draws take
	// the same seed.
	SeedOffset uint64
}

// Outputs are optional writers for one evaluation's raw data.
type Outputs struct {
	// Records receives every request as a JSON line.
	Records io.Writer
	// Telemetry receives every scrape as a JSON line (live engines only).
	Telemetry io.Writer
	// Progress, when set, receives the live client's counters about once a
	// second while a run over HTTP goes on.
	Progress func(loadgen.Progress)
}

// Evaluation is one configuration measured at one load.
type Evaluation struct {
	Users  int            `json:"users"`
	Params map[string]any `json:"params"`
	// Virtual is set when the run happened in the simulator's virtual time.
	Virtual bool `json:"virtual"`
	// Provenance says where the numbers come from.
	Provenance Provenance         `json:"provenance"`
	Summary    *result.Result     `json:"summary"`
	Verdict    result.Verdict     `json:"-"`
	Pass       bool               `json:"pass"`
	Failed     string             `json:"failed_clause,omitempty"`
	Signals    *telemetry.Signals `json:"telemetry,omitempty"`
	// Sim describes the simulated deployment (virtual runs only).
	Sim *SimInfo `json:"sim,omitempty"`
	// Wall is how long the evaluation took on this machine.
	Wall time.Duration `json:"wall_ns"`
	// Interrupted is set on the partial evaluation returned with ctx's
	// error when a live run was stopped (Ctrl-C); Scheduled counts the
	// requests it had scheduled.
	Interrupted bool  `json:"interrupted,omitempty"`
	Scheduled   int64 `json:"scheduled,omitempty"`
}

// SimInfo is what the simulator knows that a real server would not say.
type SimInfo struct {
	Replicas       int     `json:"replicas"`
	KVTokens       int     `json:"kv_tokens_per_replica"`
	MeanKVUsage    float64 `json:"mean_kv_cache_usage"`
	PeakKVUsage    float64 `json:"peak_kv_cache_usage"`
	MeanSMActive   float64 `json:"mean_sm_active"`
	PrefixHitRate  float64 `json:"prefix_cache_hit_rate"`
	Preemptions    int64   `json:"preemptions"`
	AttentionShare float64 `json:"attention_share"`
	MoEShare       float64 `json:"moe_share"`
	DenseShare     float64 `json:"dense_gemm_share"`
	CommShare      float64 `json:"communication_share"`
	OverheadShare  float64 `json:"overhead_share"`
	OtherShare     float64 `json:"other_share"`
	// Engine sums the replicas' counters (steps, preemptions, prefix
	// queries and hits) over the whole run.
	Engine sim.EngineStats `json:"engine"`
	Series *sim.Series     `json:"-"`
}

// Repeat reduces an evaluation to what the sweep needs.
func (ev *Evaluation) Repeat() Repeat {
	r := Repeat{Pass: ev.Pass, Insufficient: ev.Verdict.Outcome() == result.VerdictInsufficient,
		FewSamplesPass: ev.Verdict.FewSamplesPass(), FailedClause: ev.Failed, Detail: ev}
	if ev.Summary != nil {
		o := ev.Summary.Overall
		r.OutputThroughput = o.OutputTokensPerSecond
		r.TTFTP95 = o.TTFT.P95 / 1000
		r.ITLP95 = o.ITL.P95 / 1000
	}
	return r
}

// Evaluator runs one configuration at one load on the configured engine:
// the simulator's launcher runs it in virtual time (engine.Virtual), any
// other launcher serves it over HTTP. Live servers are reused: a server is
// started once per distinct flag set and kept while evaluations ask for the
// same flags (its prefix cache reset between runs), restarted only when the
// flags change or it died. Close stops the last one.
type Evaluator struct {
	setup    Setup
	gen      workload.Workload
	launcher engine.Launcher
	// virtual is the simulator of a Setup that evaluates in virtual time
	// (Setup.Virtual); nil evaluates on servers.
	virtual engine.Virtual
	// seeded holds the workloads of other seeds (Load.SeedOffset > 0),
	// built on first use.
	seedMu sync.Mutex
	seeded map[uint64]workload.Workload
	logger *slog.Logger

	// mu serialises live evaluations: a launcher runs one server at a time.
	mu      sync.Mutex
	cur     engine.Server
	curKey  string
	curFrom time.Time
	// curVersion is what the current server said on GET /version.
	curVersion string
	usage      EngineUsage
	// warnedReset is set once a server said it cannot reset its cache.
	warnedReset bool
	// dry counts what virtual evaluations would cost live (dryrun.go).
	dry dryCount
	// watch, when set, receives every live evaluation's status (WatchRuns).
	watch atomic.Pointer[func(RunStatus)]
	// parent is the Evaluator this one was forked from (a parallel
	// study's worker): Close adds this one's engine usage to it.
	parent *Evaluator
}

// EngineUsage counts what live evaluations cost on the engine.
type EngineUsage struct {
	// Starts is the number of servers started (a reused server counts once).
	Starts int `json:"starts"`
	// Seconds is the time servers were up, start-up included.
	Seconds float64 `json:"engine_seconds"`
	// Resets is the number of prefix-cache resets between runs.
	Resets int `json:"cache_resets"`
}

// ErrNothingServed: a live server answered every request of a run with an
// HTTP error; the run measured no capacity.
var ErrNothingServed = errors.New("the server served nothing")

// ErrNoEngine is a programming error: an Evaluator needs the launcher the
// configuration names; spoc never substitutes the simulator for it.
var ErrNoEngine = errors.New("evaluator: no engine launcher given")

// NewEvaluator builds the workload of s once. s.Launcher is the engine
// every evaluation runs on; nil is an error (ErrNoEngine), and so is a
// virtual Setup whose launcher is not the simulator.
func NewEvaluator(s Setup, logger *slog.Logger) (*Evaluator, error) {
	if s.Launcher == nil {
		return nil, ErrNoEngine
	}
	var virtual engine.Virtual
	if s.Virtual {
		v, ok := s.Launcher.(engine.Virtual)
		if !ok {
			return nil, fmt.Errorf("%w: a virtual Setup needs the simulator's launcher, not %T", ErrNoEngine, s.Launcher)
		}
		virtual = v
	}
	gen, err := workload.OpenForRun(s.Workload, s.Deployment.MaxModelLen, s.MidSessionStart)
	if err != nil {
		return nil, fmt.Errorf("build workload: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Evaluator{setup: s, gen: gen, launcher: s.Launcher, virtual: virtual, logger: logger}, nil
}

// Workload is the session source shared by every evaluation.
func (e *Evaluator) Workload() workload.Workload { return e.gen }

// workloadFor is the workload of workload.seed + offset.
func (e *Evaluator) workloadFor(offset uint64) (workload.Workload, error) {
	if offset == 0 {
		return e.gen, nil
	}
	e.seedMu.Lock()
	defer e.seedMu.Unlock()
	if w, ok := e.seeded[offset]; ok {
		return w, nil
	}
	spec := e.setup.Workload
	spec.Seed += offset
	w, err := workload.OpenForRun(spec, e.setup.Deployment.MaxModelLen, e.setup.MidSessionStart)
	if err != nil {
		return nil, fmt.Errorf("build workload with seed %d: %w", spec.Seed, err)
	}
	if e.seeded == nil {
		e.seeded = map[uint64]workload.Workload{}
	}
	e.seeded[offset] = w
	return w, nil
}

// Setup is the resolved configuration the evaluator was built with.
func (e *Evaluator) Setup() Setup { return e.setup }

// Launcher is the engine every evaluation runs on.
func (e *Evaluator) Launcher() engine.Launcher { return e.launcher }

// Virtual reports whether evaluations run in the simulator's virtual time.
func (e *Evaluator) Virtual() bool { return e.virtual != nil }

// Usage returns the engine starts and time spent so far (live engines).
func (e *Evaluator) Usage() EngineUsage {
	e.mu.Lock()
	defer e.mu.Unlock()
	u := e.usage
	if e.cur != nil {
		u.Seconds += time.Since(e.curFrom).Seconds()
	}
	return u
}

// Evaluate runs params at load and judges the run against the SLA. An
// engine configuration that cannot run (weights or KV cache do not fit, the
// server crashes or runs out of memory) returns an error wrapping
// search.ErrInfeasible.
func (e *Evaluator) Evaluate(ctx context.Context, params map[string]any, load Load, out Outputs) (*Evaluation, error) {
	if load.Users < 1 {
		return nil, fmt.Errorf("evaluate: users must be at least 1, got %d", load.Users)
	}
	start := time.Now()
	var ev *Evaluation
	var err error
	if e.virtual != nil {
		var dep sim.Deployment
		if dep, err = e.virtual.VirtualDeployment(engine.Params(params)); err == nil {
			e.dry.add(params, load)
			ev, err = e.evaluateVirtual(ctx, dep, params, load, out)
		}
	} else {
		ev, err = e.evaluateLive(ctx, params, load, out)
	}
	if err != nil && ev != nil && ev.Interrupted {
		// what was measured before Ctrl-C travels with the error (spoc
		// run prints it); it is no verdict
		ev.Wall = time.Since(start)
		return ev, err
	}
	if err != nil {
		// the one place an engine failure caused by the flags becomes
		// search's infeasible: a study records the trial INFEASIBLE and a
		// sweep skips the candidate
		if errors.Is(err, engine.ErrInfeasible) && !errors.Is(err, search.ErrInfeasible) {
			err = fmt.Errorf("%w: %w", search.ErrInfeasible, err)
		}
		return nil, err
	}
	ev.Wall = time.Since(start)
	return ev, nil
}

// provenance is where an evaluation's numbers come from; endpoint is the
// live server's (empty for virtual runs).
func (e *Evaluator) provenance(endpoint string) Provenance {
	p := launcherProvenance(e.launcher, e.Virtual())
	p.Endpoint = endpoint
	if endpoint != "" {
		p.Version = e.curVersion
	}
	return p
}

// Deployment is the simulated deployment of params: the simulator
// launcher's, or, for a real engine, the configuration priced by the cost
// model (for roofline predictions).
func (e *Evaluator) Deployment(params map[string]any) (sim.Deployment, error) {
	if e.virtual != nil {
		return e.virtual.VirtualDeployment(engine.Params(params))
	}
	if err := e.setup.Deployment.SimErr; err != nil {
		return sim.Deployment{}, err
	}
	dep := e.setup.Deployment.Sim
	return dep, dep.Params.Apply(params)
}

// server returns a running server configured with params: the current one
// when its flags are the same (prefix cache reset), else a new one. The
// caller holds e.mu.
func (e *Evaluator) server(ctx context.Context, params map[string]any, load Load) (engine.Server, error) {
	flags, err := vllm.Flags(vllm.Merge(e.setup.Search.BaseParams, params)) // the command line, not how it was spelt
	if err != nil {
		return nil, err
	}
	key := strings.Join(flags, " ")
	if e.cur != nil && e.curKey == key {
		err := e.cur.ResetCache(ctx)
		switch {
		case err == nil:
			e.usage.Resets++
			return e.cur, nil
		case errors.Is(err, engine.ErrResetUnsupported):
			if !e.warnedReset {
				e.warnedReset = true
				e.logger.Warn("the server cannot reset its prefix cache; each run starts with the cache the previous run left", "err", err)
			}
			return e.cur, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		}
		e.logger.Warn("server did not answer the cache reset; restarting it", "err", err)
	}
	if err := e.stopLocked(ctx); err != nil {
		return nil, err
	}
	if watch := e.watcher(); watch != nil && ownsServers(e.launcher) {
		watch(RunStatus{Load: load, Starting: true})
	}
	srv, err := e.launcher.Start(ctx, engine.Params(params))
	if err != nil {
		return nil, fmt.Errorf("start engine: %w", err)
	}
	e.cur, e.curKey, e.curFrom, e.curVersion = srv, key, time.Now(), ""
	e.usage.Starts++
	ep := srv.Endpoint()
	if ep.Model == "" {
		ep.Model = e.model()
	}
	if err := Preflight(ctx, ep, e.setup.Client.Endpoint, e.setup.Client.APIKey); err != nil {
		if serr := e.stopLocked(ctx); serr != nil {
			e.logger.Warn("stop engine after a failed preflight", "err", serr)
		}
		return nil, err
	}
	e.curVersion = serverVersion(ctx, ep.BaseURL)
	return srv, nil
}

// stopLocked stops the current server, if any. The caller holds e.mu.
func (e *Evaluator) stopLocked(ctx context.Context) error {
	if e.cur == nil {
		return nil
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	err := e.cur.Stop(sctx)
	e.usage.Seconds += time.Since(e.curFrom).Seconds()
	e.cur, e.curKey = nil, ""
	if err != nil {
		return fmt.Errorf("stop engine: %w", err)
	}
	return nil
}

// Close stops the running server, if any. The Evaluator can be used
// again afterwards (the next evaluation starts a server).
func (e *Evaluator) Close(ctx context.Context) error {
	e.mu.Lock()
	err := e.stopLocked(ctx)
	var u EngineUsage
	if e.parent != nil {
		u, e.usage = e.usage, EngineUsage{}
	}
	e.mu.Unlock()
	if e.parent != nil {
		e.parent.mu.Lock()
		e.parent.usage.Starts += u.Starts
		e.parent.usage.Seconds += u.Seconds
		e.parent.usage.Resets += u.Resets
		e.parent.mu.Unlock()
	}
	return err
}

func (e *Evaluator) evaluateVirtual(ctx context.Context, dep sim.Deployment, params map[string]any, load Load, out Outputs) (*Evaluation, error) {
	gen, err := e.workloadFor(load.SeedOffset)
	if err != nil {
		return nil, err
	}
	epoch := time.Unix(0, 0).UTC()
	window := result.Window{Start: epoch.Add(load.Warmup), End: epoch.Add(load.Warmup + load.Duration)}
	sum := result.NewSummary(e.setup.SLA, window, result.WithClientBoundLag(e.setup.Client.ClientBoundLagP99), result.WithPromptDriftLimit(e.setup.Client.PromptDriftLimit))
	sinks := []result.Sink{sum}
	var w *result.Writer
	if out.Records != nil {
		w = result.NewWriter(out.Records)
		sinks = append(sinks, w)
	}
	stats, err := sim.RunVirtual(ctx, sim.Options{
		Deployment: dep, Users: load.Users, Ramp: load.Ramp, Warmup: load.Warmup, Duration: load.Duration,
		ThinkTimeScale: load.ThinkTimeScale, Start: epoch, RunID: fmt.Sprintf("sim-%d", load.Users),
		ErrorRate: e.setup.Deployment.SimErrorRate, Seed: e.setup.Workload.Seed + load.SeedOffset,
	}, gen, result.Tee(sinks...))
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
	ev := &Evaluation{Users: load.Users, Params: params, Virtual: true, Provenance: e.provenance(""), Summary: res, Verdict: res.SLA, Pass: res.SLA.Pass, Failed: res.SLA.First()}
	sig := SimSignals(stats, dep, e.setup.Telemetry.StragglerClockDrop)
	ev.Signals = &sig
	share := stats.Share()
	ev.Sim = &SimInfo{
		Replicas: stats.Replicas, KVTokens: stats.KVTokens, MeanKVUsage: stats.MeanKVUsage, PeakKVUsage: stats.PeakKVUsage,
		MeanSMActive: stats.MeanSMActive, Preemptions: stats.Engine.Preemptions,
		AttentionShare: share.Attention, MoEShare: share.MoE, DenseShare: share.DenseGEMM, CommShare: share.Communication,
		OverheadShare: share.Overhead, OtherShare: share.Other, Engine: stats.Engine, Series: &stats.Series,
	}
	if q := stats.Engine.PrefixQueries; q > 0 {
		ev.Sim.PrefixHitRate = float64(stats.Engine.PrefixHits) / float64(q)
	}
	return ev, nil
}

func (e *Evaluator) evaluateLive(ctx context.Context, params map[string]any, load Load, out Outputs) (ev *Evaluation, err error) {
	gen, err := e.workloadFor(load.SeedOffset)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	srv, err := e.server(ctx, params, load)
	if err != nil {
		return nil, err
	}
	ep := srv.Endpoint()
	defer func() {
		// A run that failed may have killed the server: the next
		// evaluation must not reuse it blindly. Say what really happens to
		// it: spoc stops only a server it started.
		if err == nil {
			return
		}
		interrupted := ctx.Err() != nil
		switch owned := ownsServers(e.launcher); {
		case !owned && interrupted:
			e.logger.Warn("interrupted: the run's requests were cancelled; the external server keeps running (spoc never stops a server it did not start)", "endpoint", ep.BaseURL)
		case !owned:
			e.logger.Warn("the run failed; the external server is left as it is (spoc never stops a server it did not start): the next run checks it again", "endpoint", ep.BaseURL, "err", err)
		case interrupted:
			e.logger.Warn("interrupted: stopping the server spoc started", "err", err)
		default:
			e.logger.Warn("stopping the server after a failed run; the next run starts a new one", "err", err)
		}
		if serr := e.stopLocked(ctx); serr != nil {
			e.logger.Warn("stop engine after a failed run", "err", serr)
		}
	}()

	tel := e.setup.Telemetry
	var targets []telemetry.Target
	for i, u := range ep.MetricsURLs {
		name := fmt.Sprintf("engine%d", i)
		if i < len(ep.MetricsNames) && ep.MetricsNames[i] != "" {
			name = ep.MetricsNames[i] // the pod of a Kubernetes replica
		}
		targets = append(targets, telemetry.Target{Name: name, URL: u})
	}
	targets = append(targets, e.setup.Telemetry.Targets...)
	var coll *telemetry.Collector
	tctx, stopTelemetry := context.WithCancel(ctx)
	var twg sync.WaitGroup
	// With a Prometheus server configured, the run's window is queried from
	// it afterwards instead of scraping the targets directly.
	if tel.Enabled && len(targets) > 0 && tel.Prometheus == "" {
		coll, err = telemetry.NewCollector(targets, tel.Interval, telemetry.Options{
			JSONL: out.Telemetry, Logger: e.logger,
			Derive: telemetry.DeriveOptions{ClockFraction: tel.StragglerClockDrop, TPSize: e.setup.Deployment.TensorParallelSize},
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
		model = e.model()
	}
	runner, err := loadgen.New(loadgen.Options{
		Target: ep.BaseURL, Endpoint: e.setup.Client.Endpoint, Model: model, APIKey: e.setup.Client.APIKey,
		Users: load.Users, Ramp: load.Ramp, Warmup: load.Warmup, Duration: load.Duration, ThinkTimeScale: load.ThinkTimeScale,
		RequestTimeout: e.setup.Client.RequestTimeout, FirstByteTimeout: e.setup.Client.FirstByteTimeout,
		ExactOutputLength: e.setup.Client.ExactOutputLength, HistoryPolicy: e.setup.Client.HistoryPolicy, RunID: fmt.Sprintf("run-%d-%d", load.Users, time.Now().Unix()),
		Renderer: gen, Logger: e.logger,
	})
	if err != nil {
		return nil, err
	}
	sum := result.NewSummary(e.setup.SLA, result.Window{}, result.WithClientBoundLag(e.setup.Client.ClientBoundLagP99), result.WithPromptDriftLimit(e.setup.Client.PromptDriftLimit))
	sinks := []result.Sink{sum}
	var w *result.Writer
	if out.Records != nil {
		w = result.NewWriter(out.Records)
		sinks = append(sinks, w)
	}
	report := out.Progress
	if watch := e.watcher(); watch != nil {
		started, length := time.Now(), load.Warmup+load.Duration
		report = func(pr loadgen.Progress) {
			if out.Progress != nil {
				out.Progress(pr)
			}
			watch(RunStatus{Load: load, Elapsed: time.Since(started), Length: length, Progress: pr})
		}
	}
	stopProgress := watchProgress(runner, report)
	rep, err := runner.Run(ctx, gen, result.Tee(sinks...))
	stopProgress()
	if w != nil {
		if cerr := w.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("write records: %w", cerr)
		}
	}
	interrupted := err != nil && rep != nil && rep.Interrupted && ctx.Err() != nil
	if err != nil && !interrupted {
		return nil, err
	}
	if !interrupted {
		// A server that died during the run failed its requests: that is
		// no measurement of its capacity, so no verdict either.
		if aerr := engine.Alive(ctx, srv); aerr != nil {
			return nil, fmt.Errorf("after the run at %d users: %w", load.Users, aerr)
		}
	}
	sum.SetWindow(rep.Window)
	sum.SetClientHealth(rep.Health)
	res := sum.Result()
	if o := res.Overall; !interrupted && o.OK == 0 && o.Errors > 0 && o.ErrorsByClass[result.StatusHTTPError] == o.Errors {
		// The server answered every request with an error: it serves
		// nothing, so this is no point of a capacity curve.
		return nil, fmt.Errorf("%w: every one of %d requests at %d users got an HTTP error %v", ErrNothingServed, o.Errors, load.Users, o.ErrorsByHTTPStatus)
	}
	ev = &Evaluation{Users: load.Users, Params: params, Provenance: e.provenance(ep.BaseURL), Summary: res, Verdict: res.SLA, Pass: res.SLA.Pass, Failed: res.SLA.First(),
		Interrupted: interrupted, Scheduled: rep.Scheduled}
	if interrupted {
		// What was measured before Ctrl-C is returned with the error: a
		// caller may print it, but it is no verdict.
		return ev, err
	}
	derive := telemetry.DeriveOptions{ClockFraction: tel.StragglerClockDrop, TPSize: e.setup.Deployment.TensorParallelSize}
	switch {
	case coll != nil:
		stopTelemetry()
		twg.Wait()
		sig := coll.Window(rep.Window.Start, rep.Window.End)
		ev.Signals = &sig
	case tel.Enabled && tel.Prometheus != "":
		store, qerr := telemetry.QueryRange(ctx, tel.Prometheus, rep.Window.Start, rep.Window.End,
			telemetry.QueryOptions{Step: tel.Interval, Queries: tel.Queries})
		if qerr != nil {
			// the load run stands on its own; the gap is logged, not fatal
			e.logger.Warn("telemetry query failed; the run has no engine or GPU signals", "prometheus", tel.Prometheus, "err", qerr)
			break
		}
		sig := store.Window(rep.Window.Start, rep.Window.End, derive)
		ev.Signals = &sig
	}
	return ev, nil
}

// IsInfeasible reports whether err means the configuration cannot run.
func IsInfeasible(err error) bool { return errors.Is(err, search.ErrInfeasible) }

// model is the name requests use when the server does not say: the served
// name, else the model.
func (e *Evaluator) model() string {
	return e.setup.Deployment.RequestModel()
}

// watchProgress calls fn with the runner's counters every second until the
// returned stop is called; a nil fn watches nothing.
func watchProgress(r *loadgen.Runner, fn func(loadgen.Progress)) (stop func()) {
	if fn == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fn(r.Progress())
			}
		}
	}()
	return func() { close(done); <-finished }
}
